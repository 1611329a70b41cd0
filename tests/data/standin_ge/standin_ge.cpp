/*
 * The stand-in GE of standin_ge.h (tests/test_geir.py): one IR, InplacePartialRotaryMulGrad (inputs dy, cos, sin;
 * attributes rotary_mode Int and partial_slice ListInt, which an operator made from the IR holds at their defaults
 * 0 and {0, 0} until set, as GE's do; its ref output dy), and the Data operator (input x, output y); describing an
 * input or output its IR lacks fails, as in GE. $STANDIN_GE_MODE_TYPE, when set,
 * is the type the IR declares rotary_mode as (GE's names: VT_INT, VT_STRING, ...), for a test of an IR whose
 * attribute has another type. A graph compiles when every input of the operator is linked (else
 * ACL_ERROR_GE_PARAM_INVALID) and it is float32 interleave with a slice list of at least two values, the two its
 * tiling reads (else FAILED), each refusal returned as PARAM_INVALID with the inner status in the message, as GE's
 * CompileGraph does; running it computes the interleave gradient on the host from the feeds, each found
 * through its Data node's index. Enough for prmg to build, load and judge its real shim here; not GE.
 *
 * Its life follows GE's (hicann/ge api/session/client): GEInitialize of an initialised GE is SUCCESS, GEFinalize of
 * one not initialised is SUCCESS and does nothing, a session's calls fail once GE is finalised. $STANDIN_GE_FAIL
 * names one step to fail, for the shim's tests of each failure path: "initialize" (GEInitialize returns FAILED having
 * started GE's core, as GE's does when its session manager fails after GEInitializeV2), "session" (the Session's
 * constructor throws), "session_unmade" (the constructor returns having made no session, as GE's does when it fails:
 * saying so only in GE's messages, every later call FAILED naming the missing inner session, as GE's GetSession
 * does), "add" (AddGraph returns FAILED), "compile" (CompileGraph throws) or "run" (RunGraph returns
 * FAILED). $STANDIN_GE_LOG, when set, is a file each call of GE's life is appended to, one line each: GEInitialize,
 * GEFinalize (only when it ends an initialised GE), Session (Session unmade), ~Session (with "after GEFinalize" when
 * GE was no longer initialised), AddGraph ID, RemoveGraph ID. GEGetErrorMsgV2 empties GE's messages as it reads
 * them, as GE's does; a RunGraph of a graph never added says so (GE_GRAPH_GRAPH_NOT_EXIST), as GE's does since 2026-01.
 */
#include "standin_ge.h"

#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace ge {

struct OperatorState {
    std::string type;
    std::map<std::string, Operator> inputs;
    std::map<std::string, TensorDesc> input_descs;
    std::map<std::string, int64_t> ints;
    std::map<std::string, std::vector<int64_t>> lists;
};

namespace {
std::string g_error;
const char *const GRAD = "InplacePartialRotaryMulGrad";
const char *const INPUTS[] = {"dy", "cos", "sin"};
const char *const UNMADE = "GetSession fail for InnerSession does not exist, session_id:0.";
const Status GE_GRAPH_GRAPH_NOT_EXIST = 1343242242U;

bool g_initialised = false;

Status fail(Status status, const std::string &message)
{
    g_error = "stand-in GE: " + message;
    return status;
}

// Whether $STANDIN_GE_FAIL names `step`.
bool failing(const char *step)
{
    const char *which = std::getenv("STANDIN_GE_FAIL");
    return which != nullptr && std::strcmp(which, step) == 0;
}

// Appends `line` to $STANDIN_GE_LOG (when set).
void log(const std::string &line)
{
    const char *path = std::getenv("STANDIN_GE_LOG");
    if (path == nullptr)
        return;
    if (FILE *file = std::fopen(path, "a")) {
        std::fprintf(file, "%s\n", line.c_str());
        std::fclose(file);
    }
}

// Whether the IR of `type` declares input (else output) `name`, which GE's UpdateInputDesc and UpdateOutputDesc
// refuse otherwise.
bool declares(const std::string &type, bool input, const char *name)
{
    if (type == GRAD)
        return std::strcmp(name, "dy") == 0
               || (input && (std::strcmp(name, "cos") == 0 || std::strcmp(name, "sin") == 0));
    return std::strcmp(name, input ? "x" : "y") == 0;        // Data
}
}  // namespace

AscendString::AscendString(const char *text) : text_(text != nullptr ? text : "") {}
const char *AscendString::GetString() const { return text_.c_str(); }
bool AscendString::operator<(const AscendString &other) const { return text_ < other.text_; }

Shape::Shape(const std::vector<int64_t> &dims) : dims_(dims) {}
std::vector<int64_t> Shape::GetDims() const { return dims_; }

TensorDesc::TensorDesc(Shape shape, Format format, DataType data_type)
    : shape_(shape), format_(format), data_type_(data_type) {}
Shape TensorDesc::GetShape() const { return shape_; }
DataType TensorDesc::GetDataType() const { return data_type_; }
void TensorDesc::SetPlacement(Placement placement) { placement_ = placement; }

Tensor::Tensor(const TensorDesc &desc, const uint8_t *data, size_t size) : desc_(desc), bytes_(data, data + size) {}
TensorDesc Tensor::GetTensorDesc() const { return desc_; }
const uint8_t *Tensor::GetData() const { return bytes_.data(); }
size_t Tensor::GetSize() const { return bytes_.size(); }

Operator::Operator(std::shared_ptr<OperatorState> state) : state_(std::move(state)) {}
bool Operator::IsEmpty() const { return state_ == nullptr; }
std::shared_ptr<OperatorState> Operator::state() const { return state_; }

Operator &Operator::SetInput(const char *dst_name, const Operator &src_oprt)
{
    state_->inputs[dst_name] = src_oprt;
    return *this;
}

graphStatus Operator::UpdateInputDesc(const char *name, const TensorDesc &tensor_desc)
{
    if (!declares(state_->type, true, name))
        return fail(GRAPH_FAILED, state_->type + " has no input " + name);
    state_->input_descs[name] = tensor_desc;
    return GRAPH_SUCCESS;
}

graphStatus Operator::UpdateOutputDesc(const char *name, const TensorDesc &)
{
    return declares(state_->type, false, name) ? GRAPH_SUCCESS
                                               : fail(GRAPH_FAILED, state_->type + " has no output " + name);
}

Operator &Operator::SetAttr(const char *name, int64_t attr_value)
{
    state_->ints[name] = attr_value;
    return *this;
}

Operator &Operator::SetAttr(const char *name, const std::vector<int64_t> &attr_value)
{
    state_->lists[name] = attr_value;
    return *this;
}

graphStatus Operator::GetAllIrAttrNamesAndTypes(std::map<AscendString, AscendString> &attr_name_types) const
{
    attr_name_types.clear();
    if (state_->type == GRAD) {
        const char *mode_type = std::getenv("STANDIN_GE_MODE_TYPE");
        attr_name_types[AscendString("rotary_mode")] = AscendString(mode_type != nullptr ? mode_type : "VT_INT");
        attr_name_types[AscendString("partial_slice")] = AscendString("VT_LIST_INT");
    }
    return GRAPH_SUCCESS;
}

Operator OperatorFactory::CreateOperator(const char *const, const char *const operator_type)
{
    if (!IsExistOp(operator_type))
        return Operator();
    auto state = std::make_shared<OperatorState>();
    state->type = operator_type;
    if (state->type == GRAD) {              // the IR's defaults, which a graph that sets no value keeps
        state->ints["rotary_mode"] = 0;
        state->lists["partial_slice"] = {0, 0};
    }
    return Operator(state);
}

bool OperatorFactory::IsExistOp(const char *const operator_type)
{
    return std::strcmp(operator_type, GRAD) == 0 || std::strcmp(operator_type, "Data") == 0;
}

Graph::Graph(const char *) {}
Graph &Graph::SetInputs(const std::vector<Operator> &) { return *this; }
Graph &Graph::SetOutputs(const std::vector<std::pair<Operator, AscendString>> &outputs)
{
    outputs_ = outputs;
    return *this;
}
std::vector<std::pair<Operator, AscendString>> Graph::outputs() const { return outputs_; }

Session::Session(const std::map<AscendString, AscendString> &)
{
    if (failing("session"))
        throw std::runtime_error("stand-in GE: the session could not be made");
    made_ = !failing("session_unmade");
    if (!made_)
        fail(FAILED, "Construct session failed, error code:1343225857");
    log(made_ ? "Session" : "Session unmade");
}

Session::~Session() { log(g_initialised ? "~Session" : "~Session after GEFinalize"); }

Status Session::AddGraph(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &)
{
    if (!made_)
        return fail(FAILED, UNMADE);
    if (!g_initialised)
        return fail(FAILED, "AddGraph: GE is not initialised");
    if (failing("add"))
        return fail(FAILED, "AddGraph failed");
    graphs_.emplace(graph_id, graph);
    log("AddGraph " + std::to_string(graph_id));
    return SUCCESS;
}

Status Session::CompileGraph(uint32_t graph_id)
{
    if (!made_)
        return fail(FAILED, UNMADE);
    if (failing("compile"))
        throw std::runtime_error("stand-in GE: CompileGraph threw");
    const OperatorState &op = *graphs_.at(graph_id).outputs().at(0).first.state();
    // GE's GE_ASSERT_SUCCESS on the inner session's status: PARAM_INVALID whatever it was, kept in the message
    auto refused = [](Status inner, const std::string &why) {
        return fail(PARAM_INVALID, "Compile graph failed, error code:" + std::to_string(inner) + ": " + why);
    };
    for (const char *name : INPUTS) {
        if (op.inputs.count(name) == 0)
            return refused(ACL_ERROR_GE_PARAM_INVALID, std::string("input ") + name + " of the operator is not linked");
        if (op.input_descs.at(name).GetDataType() != DT_FLOAT)
            return refused(FAILED, "this stand-in computes float32 only");
    }
    if (op.ints.at("rotary_mode") != 1)
        return refused(FAILED, "this stand-in computes interleave (rotary_mode 1) only");
    if (op.lists.at("partial_slice").size() < 2)
        return refused(FAILED, "partial_slice holds fewer than the two values the tiling reads");
    return SUCCESS;
}

Status Session::RunGraph(uint32_t graph_id, const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs)
{
    if (!made_)
        return fail(FAILED, UNMADE);
    if (failing("run"))
        return fail(FAILED, "RunGraph failed");
    if (graphs_.count(graph_id) == 0)
        return fail(GE_GRAPH_GRAPH_NOT_EXIST, "the graph (graph_id=" + std::to_string(graph_id) + ") does not exist");
    const OperatorState &op = *graphs_.at(graph_id).outputs().at(0).first.state();
    const Tensor *fed[3];
    for (int t = 0; t < 3; ++t)
        fed[t] = &inputs.at(static_cast<size_t>(op.inputs.at(INPUTS[t]).state()->ints.at("index")));
    std::vector<int64_t> dims = fed[0]->GetTensorDesc().GetShape().GetDims();
    std::vector<int64_t> table = fed[1]->GetTensorDesc().GetShape().GetDims();
    std::vector<float> dx(fed[0]->GetSize() / sizeof(float));
    std::memcpy(dx.data(), fed[0]->GetData(), fed[0]->GetSize());
    const float *g = reinterpret_cast<const float *>(fed[0]->GetData());
    const float *c = reinterpret_cast<const float *>(fed[1]->GetData());
    const float *s = reinterpret_cast<const float *>(fed[2]->GetData());
    const int64_t start = op.lists.at("partial_slice")[0], length = op.lists.at("partial_slice")[1] - start;
    for (int64_t b = 0; b < dims[0]; ++b)
        for (int64_t q = 0; q < dims[1]; ++q)
            for (int64_t n = 0; n < dims[2]; ++n) {
                int64_t row = ((b * dims[1] + q) * dims[2] + n) * dims[3] + start;
                int64_t at = (((table[0] == 1 ? 0 : b) * table[1] + (table[1] == 1 ? 0 : q)) * table[2]
                              + (table[2] == 1 ? 0 : n)) * length;
                for (int64_t k = 0; k + 1 < length; k += 2) {
                    dx[row + k] = c[at + k] * g[row + k] + s[at + k + 1] * g[row + k + 1];
                    dx[row + k + 1] = c[at + k + 1] * g[row + k + 1] - s[at + k] * g[row + k];
                }
            }
    outputs.assign(1, Tensor(fed[0]->GetTensorDesc(), reinterpret_cast<const uint8_t *>(dx.data()),
                             dx.size() * sizeof(float)));
    return SUCCESS;
}

Status Session::RemoveGraph(uint32_t graph_id)
{
    if (!made_)
        return fail(FAILED, UNMADE);
    if (graphs_.erase(graph_id) == 0)
        return fail(FAILED, "RemoveGraph: no graph " + std::to_string(graph_id));
    log("RemoveGraph " + std::to_string(graph_id));
    return SUCCESS;
}

Status GEInitialize(const std::map<AscendString, AscendString> &options)
{
    if (!options.count(AscendString(OPTION_EXEC_DEVICE_ID)))
        return fail(FAILED, "no ge.exec.deviceId");
    if (!g_initialised)
        log("GEInitialize");
    g_initialised = true;
    return failing("initialize") ? fail(FAILED, "the session manager failed to start") : SUCCESS;
}

Status GEFinalize()
{
    if (g_initialised)
        log("GEFinalize");
    g_initialised = false;
    return SUCCESS;
}

AscendString GEGetErrorMsgV2()
{
    const AscendString text(g_error.c_str());
    g_error.clear();
    return text;
}

}  // namespace ge
