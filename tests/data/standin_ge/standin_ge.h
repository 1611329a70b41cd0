/*
 * A stand-in for the part of GE's public C++ API that prmg's shim (runners/geir/prmg_geir.cpp) calls, written for
 * tests/test_geir.py: the test installs it as a CANN toolkit's ge/ and graph/ headers (each header the shim
 * includes holds only `#include "standin_ge.h"`) and builds standin_ge.cpp as the toolkit's libge_runner.so and
 * libgraph.so, so that prmg compiles, links, loads and runs the real shim on a host without GE.
 * It declares what the shim uses, with GE's names, types and status codes; it is not GE.
 */
#ifndef STANDIN_GE_H
#define STANDIN_GE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

static const uint32_t ACL_ERROR_GE_PARAM_INVALID = 145000U;
static const uint32_t ACL_ERROR_GE_EXEC_NOT_INIT = 145001U;
static const uint32_t ACL_ERROR_GE_MEMORY_ALLOCATION = 245000U;

namespace ge {

using graphStatus = uint32_t;
using Status = uint32_t;
const graphStatus GRAPH_SUCCESS = 0;
const graphStatus GRAPH_FAILED = 0xFFFFFFFFU;
const graphStatus GRAPH_INVALID_IR_DEF = 50331646;
const Status SUCCESS = 0;
const Status FAILED = 0xFFFFFFFFU;
const Status PARAM_INVALID = 1343225857U;   // what Session::CompileGraph returns for any refused compile

enum DataType { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_BF16 = 27 };
enum Format { FORMAT_NCHW = 0, FORMAT_NHWC = 1, FORMAT_ND = 2 };
enum Placement { kPlacementHost = 0, kPlacementDevice = 1 };

const char *const OPTION_EXEC_DEVICE_ID = "ge.exec.deviceId";
const char *const OPTION_GRAPH_RUN_MODE = "ge.graphRunMode";
const std::string PRECISION_MODE = "ge.exec.precision_mode";

class AscendString {
public:
    AscendString() = default;
    AscendString(const char *text);
    const char *GetString() const;
    bool operator<(const AscendString &other) const;
private:
    std::string text_;
};

class Shape {
public:
    Shape() = default;
    explicit Shape(const std::vector<int64_t> &dims);
    std::vector<int64_t> GetDims() const;
private:
    std::vector<int64_t> dims_;
};

class TensorDesc {
public:
    TensorDesc() = default;
    TensorDesc(Shape shape, Format format, DataType data_type);
    Shape GetShape() const;
    DataType GetDataType() const;
    void SetPlacement(Placement placement);
private:
    Shape shape_;
    Format format_ = FORMAT_ND;
    DataType data_type_ = DT_FLOAT;
    Placement placement_ = kPlacementDevice;
};

class Tensor {
public:
    Tensor() = default;
    Tensor(const TensorDesc &desc, const uint8_t *data, size_t size);
    TensorDesc GetTensorDesc() const;
    const uint8_t *GetData() const;
    size_t GetSize() const;
private:
    TensorDesc desc_;
    std::vector<uint8_t> bytes_;
};

struct OperatorState;

class Operator {
public:
    Operator() = default;
    explicit Operator(std::shared_ptr<OperatorState> state);
    bool IsEmpty() const;
    Operator &SetInput(const char *dst_name, const Operator &src_oprt);
    graphStatus UpdateInputDesc(const char *name, const TensorDesc &tensor_desc);
    graphStatus UpdateOutputDesc(const char *name, const TensorDesc &tensor_desc);
    Operator &SetAttr(const char *name, int64_t attr_value);
    Operator &SetAttr(const char *name, const std::vector<int64_t> &attr_value);
    graphStatus GetAllIrAttrNamesAndTypes(std::map<AscendString, AscendString> &attr_name_types) const;
    std::shared_ptr<OperatorState> state() const;
private:
    std::shared_ptr<OperatorState> state_;
};

class OperatorFactory {
public:
    static Operator CreateOperator(const char *const operator_name, const char *const operator_type);
    static bool IsExistOp(const char *const operator_type);
};

class Graph {
public:
    explicit Graph(const char *name);
    Graph &SetInputs(const std::vector<Operator> &inputs);
    Graph &SetOutputs(const std::vector<std::pair<Operator, AscendString>> &outputs);
    std::vector<std::pair<Operator, AscendString>> outputs() const;
private:
    std::vector<std::pair<Operator, AscendString>> outputs_;
};

class Session {
public:
    explicit Session(const std::map<AscendString, AscendString> &options);
    ~Session();
    Status AddGraph(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &options);
    Status CompileGraph(uint32_t graph_id);
    Status RunGraph(uint32_t graph_id, const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs);
    Status RemoveGraph(uint32_t graph_id);
private:
    std::map<uint32_t, Graph> graphs_;
    bool made_ = true;
};

Status GEInitialize(const std::map<AscendString, AscendString> &options);
Status GEFinalize();
AscendString GEGetErrorMsgV2();

}  // namespace ge

#endif
