/*
 * prmg's graph-mode shim (prmg_geir.h) over GE's public C++ API: ge/ge_api.h and the graph headers of a CANN
 * toolkit. prmg compiles it on first use with the host's C++ compiler (prmg_cli/device/runners/geir.py says how); the
 * syntax alone is checked against GE's published headers by `make geir-syntax GE_INCLUDE="..."`.
 *
 * Per process: GEInitialize (device id, graph run mode, precision mode keeping every dtype as given) and one
 * ge::Session, checked to exist (GE's constructor cannot say it failed: session_made). Per case: a graph of one
 * Data node per linked input (host placement, index in feed order) and the operator made from its IR by type name,
 * inputs linked and attributes set by the IR's names (after checking that the IR declares them, with the types prmg
 * sets: an attribute GE does not know would be added silently and the IR's default used; one of another type would
 * replace the IR's; a partial_slice of NULL is left unset, to its IR default), the operator's ref output as the
 * graph's output; AddGraph, CompileGraph, RunGraph on host tensors, RemoveGraph. A failing step reports GE's status,
 * the step's phase and GEGetErrorMsgV2().
 * GE is ended on every path (docs/runners.md): GEFinalize after a failed start, every added graph removed, the session
 * destroyed before GEFinalize, and GE finalised at process exit when the caller did not.
 */
#include "prmg_geir.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "ge/ge_api.h"
#include "ge/ge_error_codes.h"
#include "graph/graph.h"
#include "graph/operator.h"
#include "graph/operator_factory.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace {

// The process's GE (g_lock held by every reader and writer). g_session is a plain pointer, deleted only by end_ge():
// a static std::unique_ptr would delete it during static destruction at exit, after GE's own statics may be gone.
std::mutex g_lock;
ge::Session *g_session = nullptr;
bool g_ge_started = false;                  // GEInitialize was called (even failing) and GEFinalize was not since
bool g_exit_hook = false;                   // finalize_at_exit is registered
int32_t g_device = -1;
uint32_t g_next_graph = 1;
const uint32_t NO_GRAPH = 0xFFFFFFFFu;      // a graph id never added (ids count up from 1): session_made's probe

using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void clear(prmg_geir_report *report)
{
    std::memset(report, 0, sizeof *report);
}

// Records status from `call` in `phase` with a printf-style message; returns status.
uint32_t record(prmg_geir_report *report, uint32_t status, int32_t phase, const char *call, const char *format, ...)
    __attribute__((format(printf, 5, 6)));

uint32_t record(prmg_geir_report *report, uint32_t status, int32_t phase, const char *call, const char *format, ...)
{
    report->status = status;
    report->phase = phase;
    std::snprintf(report->call, sizeof report->call, "%s", call);
    va_list args;
    va_start(args, format);
    std::vsnprintf(report->message, sizeof report->message, format, args);
    va_end(args);
    return status;
}

// GE's own account of the last failure (GEGetErrorMsgV2), "" when it has none.
std::string ge_message()
{
    ge::AscendString text = ge::GEGetErrorMsgV2();
    return text.GetString() != nullptr ? std::string(text.GetString()) : std::string();
}

// Records a GE call's failure: its status, and GE's message.
uint32_t failed(prmg_geir_report *report, uint32_t status, int32_t phase, const char *call)
{
    std::string message = ge_message();
    return record(report, status, phase, call, "%s", message.empty() ? "(GE gave no message)" : message.c_str());
}

// "name:type, ..." of an IR's attributes, for a refusal's message.
std::string attribute_list(const std::map<ge::AscendString, ge::AscendString> &attributes)
{
    std::string text;
    for (const auto &attribute : attributes) {
        text += text.empty() ? "" : ", ";
        text += std::string(attribute.first.GetString()) + ":" + attribute.second.GetString();
    }
    return text.empty() ? "none" : text;
}

// The operator of `call` made from its IR, every attribute prmg sets checked against the IR; the status.
uint32_t make_operator(const prmg_geir_call &call, ge::Operator &op, prmg_geir_report *report)
{
    if (!ge::OperatorFactory::IsExistOp(call.op_type))
        return record(report, ge::GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD, "ge::OperatorFactory::IsExistOp",
                      "no IR is registered for op type %s (its op_proto library is not under $ASCEND_OPP_PATH)",
                      call.op_type);
    op = ge::OperatorFactory::CreateOperator("prmg_case", call.op_type);
    if (op.IsEmpty())
        return failed(report, ge::GRAPH_FAILED, PRMG_GEIR_PHASE_BUILD, "ge::OperatorFactory::CreateOperator");
    std::map<ge::AscendString, ge::AscendString> attributes;
    uint32_t status = op.GetAllIrAttrNamesAndTypes(attributes);
    if (status != ge::GRAPH_SUCCESS)
        return failed(report, status, PRMG_GEIR_PHASE_BUILD, "ge::Operator::GetAllIrAttrNamesAndTypes");
    // what prmg sets each attribute as (SetAttr with int64_t, with std::vector<int64_t>), in GE's type names
    const std::pair<const char *, const char *> wanted[] = {{call.mode_attr, "VT_INT"},
                                                            {call.slice_attr, "VT_LIST_INT"}};
    for (const auto &attribute : wanted) {
        const auto found = attributes.find(ge::AscendString(attribute.first));
        if (found == attributes.end())
            return record(report, ge::GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD,
                          "ge::Operator::GetAllIrAttrNamesAndTypes",
                          "the IR of %s declares no attribute %s (it declares %s): set by that name, GE would add it "
                          "as an unknown attribute and the operator would use its IR default", call.op_type,
                          attribute.first, attribute_list(attributes).c_str());
        const char *declared = found->second.GetString() != nullptr ? found->second.GetString() : "";
        if (std::strcmp(declared, attribute.second) != 0)
            return record(report, ge::GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD,
                          "ge::Operator::GetAllIrAttrNamesAndTypes",
                          "the IR of %s declares attribute %s as %s, not %s: set as %s, it would replace the IR's "
                          "value with one of another type, which the tiling reads as its declared type",
                          call.op_type, attribute.first, declared, attribute.second, attribute.second);
    }
    return ge::GRAPH_SUCCESS;
}

// Describes input or output `name` of `op` (of IR type `type`): GE refuses a name its IR does not declare
// (UpdateInputDesc, UpdateOutputDesc), which is GRAPH_INVALID_IR_DEF in the build phase. Returns the status.
uint32_t update_desc(ge::Operator &op, const char *type, bool input, const char *name, const ge::TensorDesc &desc,
                     prmg_geir_report *report)
{
    const uint32_t status = input ? op.UpdateInputDesc(name, desc) : op.UpdateOutputDesc(name, desc);
    if (status == ge::GRAPH_SUCCESS)
        return status;
    const std::string message = ge_message();
    return record(report, ge::GRAPH_INVALID_IR_DEF, PRMG_GEIR_PHASE_BUILD,
                  input ? "ge::Operator::UpdateInputDesc" : "ge::Operator::UpdateOutputDesc",
                  "the IR of %s declares no %s %s (GE's status %u: %s)", type, input ? "input" : "output", name,
                  status, message.empty() ? "no message" : message.c_str());
}

// The graph of one case: a Data node per linked input, the operator, its ref output as the graph's output (described
// as dy, as InferShape will: upstream's example does so too);
// `feeds` gets the host tensors in the Data nodes' index order. Returns the status.
uint32_t build(const prmg_geir_call &call, ge::Graph &graph, std::vector<ge::Tensor> &feeds,
               prmg_geir_report *report)
{
    ge::Operator op;
    uint32_t status = make_operator(call, op, report);
    if (status != ge::GRAPH_SUCCESS)
        return status;
    std::vector<ge::Operator> data_nodes;
    for (int index = 0; index < PRMG_GEIR_INPUTS; ++index) {
        const prmg_geir_tensor &input = call.inputs[index];
        if (input.data == nullptr)
            continue;                       // left unlinked: GE's checks of the graph refuse a required input so
        std::vector<int64_t> dims(input.dims, input.dims + input.dim_count);
        ge::TensorDesc desc(ge::Shape(dims), static_cast<ge::Format>(input.format),
                            static_cast<ge::DataType>(input.data_type));
        desc.SetPlacement(ge::kPlacementHost);
        std::string name = std::string("prmg_") + call.input_names[index];
        ge::Operator data = ge::OperatorFactory::CreateOperator(name.c_str(), "Data");
        if (data.IsEmpty())
            return failed(report, ge::GRAPH_FAILED, PRMG_GEIR_PHASE_BUILD, "ge::OperatorFactory::CreateOperator");
        data.SetAttr("index", static_cast<int64_t>(data_nodes.size()));
        status = update_desc(data, "Data", true, "x", desc, report);
        if (status == ge::GRAPH_SUCCESS)
            status = update_desc(data, "Data", false, "y", desc, report);
        if (status == ge::GRAPH_SUCCESS)
            status = update_desc(op, call.op_type, true, call.input_names[index], desc, report);
        if (status == ge::GRAPH_SUCCESS && index == 0)          // the ref output: dy's description
            status = update_desc(op, call.op_type, false, call.output_name, desc, report);
        if (status != ge::GRAPH_SUCCESS)
            return status;
        op.SetInput(call.input_names[index], data);
        data_nodes.push_back(data);
        feeds.emplace_back(desc, static_cast<const uint8_t *>(input.data), static_cast<size_t>(input.bytes));
    }
    op.SetAttr(call.mode_attr, static_cast<int64_t>(call.rotary_mode));
    if (call.partial_slice != nullptr)     // else left unset: the IR's default applies (prmg_geir.h)
        op.SetAttr(call.slice_attr, std::vector<int64_t>(call.partial_slice, call.partial_slice + call.slice_count));
    std::vector<std::pair<ge::Operator, ge::AscendString>> outputs{{op, ge::AscendString(call.output_name)}};
    graph.SetInputs(data_nodes).SetOutputs(outputs);
    return ge::GRAPH_SUCCESS;
}

// Copies GE's output tensor into the caller's buffer (at most its capacity) and describes it in the report.
void take_output(const prmg_geir_call &call, const ge::Tensor &output, prmg_geir_report *report)
{
    ge::TensorDesc desc = output.GetTensorDesc();
    std::vector<int64_t> dims = desc.GetShape().GetDims();
    report->output_data_type = static_cast<int32_t>(desc.GetDataType());
    report->output_dim_count = static_cast<uint32_t>(dims.size());
    for (size_t axis = 0; axis < dims.size() && axis < PRMG_GEIR_MAX_DIMS; ++axis)
        report->output_dims[axis] = dims[axis];
    report->output_bytes = output.GetSize();
    size_t copied = output.GetSize() < call.output_capacity ? output.GetSize() : call.output_capacity;
    if (copied > 0 && output.GetData() != nullptr && call.output != nullptr)
        std::memcpy(call.output, output.GetData(), copied);
}

// Compiles and runs graph_id (added to the session) on `feeds` and takes its output; `phase` follows the step, so
// that an exception is reported in the phase it was thrown in. Returns the status.
uint32_t compile_and_run(const prmg_geir_call &call, uint32_t graph_id, const std::vector<ge::Tensor> &feeds,
                         Clock::time_point began, int32_t &phase, prmg_geir_report *report)
{
    uint32_t status = g_session->CompileGraph(graph_id);
    report->compile_ms = milliseconds_since(began);
    if (status != ge::SUCCESS)
        return failed(report, status, PRMG_GEIR_PHASE_COMPILE, "ge::Session::CompileGraph");
    phase = PRMG_GEIR_PHASE_RUN;
    std::vector<ge::Tensor> outputs;
    began = Clock::now();
    status = g_session->RunGraph(graph_id, feeds, outputs);
    report->run_ms = milliseconds_since(began);
    if (status != ge::SUCCESS)
        return failed(report, status, PRMG_GEIR_PHASE_RUN, "ge::Session::RunGraph");
    if (outputs.size() != 1)
        return record(report, ge::FAILED, PRMG_GEIR_PHASE_RUN, "ge::Session::RunGraph",
                      "the graph has one output (%s's %s), RunGraph returned %zu", call.op_type, call.output_name,
                      outputs.size());
    take_output(call, outputs[0], report);
    return ge::SUCCESS;
}

// One case on the process's session (g_lock held): its graph built and added, compiled and run, then removed on
// every path once added (a failure or an exception of CompileGraph or RunGraph included). Returns the status.
uint32_t run_case(const prmg_geir_call &call, prmg_geir_report *report)
{
    ge::Graph graph("prmg_case");
    std::vector<ge::Tensor> feeds;
    uint32_t status = build(call, graph, feeds, report);
    if (status != ge::GRAPH_SUCCESS)
        return status;
    const uint32_t graph_id = g_next_graph++;
    const std::map<ge::AscendString, ge::AscendString> graph_options;
    const Clock::time_point began = Clock::now();
    status = g_session->AddGraph(graph_id, graph, graph_options);
    if (status != ge::SUCCESS)              // FAILED whatever went wrong (GE or its session failing): not a refusal
        return failed(report, status, PRMG_GEIR_PHASE_INIT, "ge::Session::AddGraph");
    int32_t phase = PRMG_GEIR_PHASE_COMPILE;
    try {
        compile_and_run(call, graph_id, feeds, began, phase, report);
    } catch (const std::exception &error) {
        record(report, ge::FAILED, phase, phase == PRMG_GEIR_PHASE_RUN ? "ge::Session::RunGraph"
               : "ge::Session::CompileGraph", "C++ exception: %s", error.what());
    } catch (...) {
        record(report, ge::FAILED, phase, phase == PRMG_GEIR_PHASE_RUN ? "ge::Session::RunGraph"
               : "ge::Session::CompileGraph", "C++ exception: not a std::exception");
    }
    uint32_t removed = ge::FAILED;
    try {
        removed = g_session->RemoveGraph(graph_id);
    } catch (...) {                         // counted as failing: reported unless the case failed first
    }
    if (report->status == ge::SUCCESS && removed != ge::SUCCESS)
        failed(report, removed, PRMG_GEIR_PHASE_RUN, "ge::Session::RemoveGraph");
    return report->status;
}

// Whether GE made g_session, else records that it did not. GE's Session constructor returns nothing when it fails
// (hicann/ge ConstructSession: GE not initialised, an option refused, its session manager failing): the object is
// left without GE's inner session, and every later call says FAILED (AddGraph: the first case's init phase). A
// RunGraph of a graph never added tells the two apart and changes nothing: GE answers a session it made that the graph
// does not exist (GE_GRAPH_GRAPH_NOT_EXIST since 2026-01, FAILED before), and only a session it did not make names
// its missing inner session ("InnerSession does not exist", SessionManager::GetSession, in GE since 2025-12).
// `constructed` is GE's message read just after the constructor (its own account of the failure, when it gave one).
bool session_made(const std::string &constructed, prmg_geir_report *report)
{
    std::vector<ge::Tensor> none;
    std::vector<ge::Tensor> outputs;
    const uint32_t status = g_session->RunGraph(NO_GRAPH, none, outputs);
    const std::string answer = ge_message();        // read, so that GE's next message is the next failure's own
    if (status == ge::SUCCESS || answer.find("InnerSession does not exist") == std::string::npos)
        return true;
    record(report, status, PRMG_GEIR_PHASE_INIT, "ge::Session::Session",
           "GE made no session (its constructor says so only in GE's messages; a RunGraph of no graph found no inner "
           "session): %s", (constructed.empty() ? answer : constructed).c_str());
    return false;
}

// Ends what prmg_geir_initialize started (g_lock held): the session, then GE. A failing GEInitialize may have left GE
// initialised (GE's core started, its session manager then failing), so GEFinalize follows any GEInitialize (GE
// makes it a no-op when GE is not initialised). Returns GEFinalize's status (SUCCESS when GE was never started).
uint32_t end_ge()
{
    ge::Session *session = g_session;
    g_session = nullptr;
    g_device = -1;
    try {
        delete session;                         // ~Session destroys GE's session: before GEFinalize
    } catch (...) {
    }
    if (!g_ge_started)
        return ge::SUCCESS;
    g_ge_started = false;
    return ge::GEFinalize();
}

// A process that exits with GE still initialised (its caller never reached prmg_geir_finalize) finalises it here,
// registered after GE's libraries were loaded and so run before their static objects are destroyed.
void finalize_at_exit()
{
    std::lock_guard<std::mutex> hold(g_lock);
    try {
        end_ge();
    } catch (...) {
    }
}

// Records an exception thrown while starting GE and ends what was started; the status.
uint32_t init_thrown(prmg_geir_report *report, uint32_t status, const char *call, const char *what)
{
    record(report, status, PRMG_GEIR_PHASE_INIT, call, "C++ exception: %s", what);
    try {
        end_ge();
    } catch (...) {
    }
    return status;
}

}  // namespace

extern "C" {

PRMG_GEIR_API uint32_t prmg_geir_abi_version(void)
{
    return PRMG_GEIR_ABI_VERSION;
}

PRMG_GEIR_API uint32_t prmg_geir_initialize(int32_t device_id, prmg_geir_report *report)
{
    clear(report);
    std::lock_guard<std::mutex> hold(g_lock);
    const char *step = "ge::GEInitialize";
    if (g_session != nullptr)
        return device_id == g_device ? ge::SUCCESS
                                     : record(report, ACL_ERROR_GE_PARAM_INVALID, PRMG_GEIR_PHASE_INIT, step,
                                              "GE is initialised for device %d in this process, not %d", g_device,
                                              device_id);
    try {
        const std::string device = std::to_string(device_id);
        const std::map<ge::AscendString, ge::AscendString> options = {
            {ge::AscendString(ge::OPTION_EXEC_DEVICE_ID), ge::AscendString(device.c_str())},
            {ge::AscendString(ge::OPTION_GRAPH_RUN_MODE), ge::AscendString("1")},
            // the kernel the aclnn path runs: no dtype of the case is changed by a precision policy
            {ge::AscendString(ge::PRECISION_MODE.c_str()), ge::AscendString("must_keep_origin_dtype")},
        };
        if (!g_exit_hook)
            g_exit_hook = std::atexit(finalize_at_exit) == 0;
        g_ge_started = true;
        uint32_t status = ge::GEInitialize(options);
        if (status != ge::SUCCESS) {
            failed(report, status, PRMG_GEIR_PHASE_INIT, step);     // GE's message, read before GEFinalize
            end_ge();
            return status;
        }
        step = "ge::Session::Session";
        (void)ge_message();                     // GE's earlier messages: what follows is the constructor's own
        const std::map<ge::AscendString, ge::AscendString> session_options;
        g_session = new ge::Session(session_options);
        if (!session_made(ge_message(), report)) {
            end_ge();
            return report->status;
        }
        g_device = device_id;
        return ge::SUCCESS;
    } catch (const std::bad_alloc &) {
        return init_thrown(report, ACL_ERROR_GE_MEMORY_ALLOCATION, step, "out of host memory");
    } catch (const std::exception &error) {
        return init_thrown(report, ge::FAILED, step, error.what());
    } catch (...) {
        return init_thrown(report, ge::FAILED, step, "not a std::exception");
    }
}

PRMG_GEIR_API uint32_t prmg_geir_run(const prmg_geir_call *call, prmg_geir_report *report)
{
    clear(report);
    std::lock_guard<std::mutex> hold(g_lock);
    if (g_session == nullptr)
        return record(report, ACL_ERROR_GE_EXEC_NOT_INIT, PRMG_GEIR_PHASE_INIT, "prmg_geir_run",
                      "prmg_geir_initialize was not called (or failed) in this process");
    try {
        return run_case(*call, report);
    } catch (const std::bad_alloc &) {
        return record(report, ACL_ERROR_GE_MEMORY_ALLOCATION, PRMG_GEIR_PHASE_BUILD, "operator new",
                      "out of host memory");
    } catch (const std::exception &error) {
        return record(report, ge::FAILED, PRMG_GEIR_PHASE_BUILD, "prmg_geir_run", "C++ exception: %s",
                      error.what());
    } catch (...) {                         // no exception may cross the C ABI: it would terminate the process
        return record(report, ge::FAILED, PRMG_GEIR_PHASE_BUILD, "prmg_geir_run", "C++ exception: not a "
                      "std::exception");
    }
}

PRMG_GEIR_API uint32_t prmg_geir_finalize(prmg_geir_report *report)
{
    clear(report);
    std::lock_guard<std::mutex> hold(g_lock);
    try {
        uint32_t status = end_ge();
        return status == ge::SUCCESS ? status : failed(report, status, PRMG_GEIR_PHASE_INIT, "ge::GEFinalize");
    } catch (...) {
        return record(report, ge::FAILED, PRMG_GEIR_PHASE_INIT, "ge::GEFinalize", "C++ exception");
    }
}

}  // extern "C"
