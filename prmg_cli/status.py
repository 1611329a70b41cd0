"""ACL / aclnn status codes and their names (from acl-abi.md; the kernel-fault codes 5070xx and 507899 from
CANN's ``acl/error_codes/rt_error_codes.h``), and GE's (graph mode: ``ge/ge_error_codes.h``,
``graph/error_codes.h`` and ``ge/ge_api_error_codes.h`` of GE's public headers).

Which statuses are an operator's refusal (``is_refusal``): aclnn's own families, 161xxx (parameter), 361xxx
(runtime) and 561xxx (inner: tiling, kernel lookup...). The ACL runtime's and the device's statuses (100xxx,
107xxx, 200xxx, 207xxx, 507xxx...) say the runtime or the device failed, never that the operator declined a
call, so they never meet an expected error, whichever call returned them.

A kernel fault is asynchronous: the launch returns 0 and the next ``aclrtSynchronizeStream`` returns its
status (507015 / 507035 for an AI Core / vector core exception, 507016 / 507036 for a trap, 507014 /
507034 for a timeout); the device is then unusable in that process (later calls fail, e.g. with 507899).
"""

from __future__ import annotations

STATUS_NAMES: dict[int, str] = {
    0: "SUCCESS",
    100000: "ACL_ERROR_INVALID_PARAM",
    100001: "ACL_ERROR_UNINITIALIZE",
    100002: "ACL_ERROR_REPEAT_INITIALIZE",
    100037: "ACL_ERROR_REPEAT_FINALIZE",
    107001: "ACL_ERROR_RT_INVALID_DEVICEID",
    107002: "ACL_ERROR_RT_CONTEXT_NULL",
    200000: "ACL_ERROR_BAD_ALLOC",
    207001: "ACL_ERROR_RT_MEMORY_ALLOCATION",
    207018: "ACL_ERROR_RT_DEVICE_OOM",
    507014: "ACL_ERROR_RT_AICORE_TIMEOUT",
    507015: "ACL_ERROR_RT_AICORE_EXCEPTION",
    507016: "ACL_ERROR_RT_AICORE_TRAP_EXCEPTION",
    507034: "ACL_ERROR_RT_VECTOR_CORE_TIMEOUT",
    507035: "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION",
    507036: "ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION",
    507899: "ACL_ERROR_RT_DRV_INTERNAL_ERROR",
    161001: "ACLNN_ERR_PARAM_NULLPTR",
    161002: "ACLNN_ERR_PARAM_INVALID",
    361001: "ACLNN_ERR_RUNTIME_ERROR",
    561000: "ACLNN_ERR_INNER",
    561001: "ACLNN_ERR_INNER_INFERSHAPE_ERROR",
    561002: "ACLNN_ERR_INNER_TILING_ERROR",
    561003: "ACLNN_ERR_INNER_FIND_KERNEL_ERROR",
    561103: "ACLNN_ERR_INNER_NULLPTR",
    561107: "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND",
    561112: "ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND",
    # GE (graph mode); 145xxx parameters, 245xxx memory, 545xxx internal, graphStatus 50331xxx
    145000: "ACL_ERROR_GE_PARAM_INVALID",
    145001: "ACL_ERROR_GE_EXEC_NOT_INIT",
    145020: "ACL_ERROR_GE_FORMAT_INVALID",
    145021: "ACL_ERROR_GE_SHAPE_INVALID",
    145022: "ACL_ERROR_GE_DATATYPE_INVALID",
    245000: "ACL_ERROR_GE_MEMORY_ALLOCATION",
    545000: "ACL_ERROR_GE_INTERNAL_ERROR",
    50331649: "GRAPH_PARAM_INVALID",
    50331646: "GRAPH_INVALID_IR_DEF",
    0xFFFFFFFF: "ge::FAILED",
    1343225857: "ge::PARAM_INVALID",
}
STATUS_CODES: dict[str, int] = {name: code for code, name in STATUS_NAMES.items()}

PARAM_NULLPTR = 161001
PARAM_INVALID = 161002
TILING_ERROR = 561002
INNER = 561000
INNER_NULLPTR = 561103
FIND_KERNEL = 561003
GE_PARAM_INVALID = 145000
GE_EXEC_NOT_INIT = 145001
GE_FORMAT_INVALID = 145020
GE_DATATYPE_INVALID = 145022
GE_FAILED = 0xFFFFFFFF
GRAPH_INVALID_IR_DEF = 50331646
# What ge::Session::CompileGraph returns for every failure of the graph's compile, whatever its inner status (an
# unlinked input, a dtype, a format, the tiling's refusal): it checks its inner session's status with
# GE_ASSERT_SUCCESS, whose ``return ::ErrorResult();`` converts to ge::PARAM_INVALID (metadef
# ``pkg_inc/common/checker.h``; hicann/ge ``api/session/client/ge_api.cc`` at ffdcbc9f7, 56f8e1bb9 and its 8.5.0 and
# 9.0.0 branches alike); GE's message keeps the inner status ("Compile graph failed, error code:%u").
GE_COMPILE_REFUSED = 1343225857


# What a refusal is about, on either call path: two refusals of one case agree when their kinds do (``aclnn+geir``).
REFUSAL_KINDS = {PARAM_NULLPTR: "a null input", GE_PARAM_INVALID: "a null input",
                 PARAM_INVALID: "the operator's definition", GE_DATATYPE_INVALID: "the operator's definition",
                 GE_FORMAT_INVALID: "the operator's definition", TILING_ERROR: "the tiling", GE_FAILED: "the tiling",
                 INNER: "the launch", GE_COMPILE_REFUSED: "the graph's compile"}
# The kinds of an aclnn first phase's refusals, which a graph's compile refuses in GE's one status
# (``GE_COMPILE_REFUSED``): such a refusal agrees with any of them.
COMPILED_KINDS = frozenset({"a null input", "the operator's definition", "the tiling"})


def refusal_kind(code: int) -> str:
    """What the refusal ``code`` is about (``REFUSAL_KINDS``), else the status itself."""
    return REFUSAL_KINDS.get(code, describe(code))


def kinds_agree(code: int, other: int) -> bool:
    """Whether two refusals of one case are of one kind (``refusal_kind``), GE's compile refusal of any kind an aclnn
    first phase's refusal has (``COMPILED_KINDS``)."""
    compiled = REFUSAL_KINDS[GE_COMPILE_REFUSED]
    kinds = {refusal_kind(code), refusal_kind(other)}
    return len(kinds) == 1 or (compiled in kinds and kinds - {compiled} <= COMPILED_KINDS)


def graph_status(code: int) -> int:
    """GE's status of the aclnn refusal ``code``: ``GE_COMPILE_REFUSED`` for a first phase's refusal
    (``COMPILED_KINDS``), else ``GE_FAILED`` (0 stays 0)."""
    if code == 0:
        return 0
    return GE_COMPILE_REFUSED if REFUSAL_KINDS.get(code) in COMPILED_KINDS else GE_FAILED


# The thousands (``code // 1000``) of the aclnn status families an operator's refusal belongs to.
REFUSAL_FAMILIES = (161, 361, 561)


def is_refusal(code: int) -> bool:
    """Whether ``code`` is an operator's refusal: ``code // 1000`` is one of ``REFUSAL_FAMILIES`` (module
    docstring). Success, runtime and device statuses are not."""
    return code > 0 and code // 1000 in REFUSAL_FAMILIES


def status_name(code: int) -> str:
    """The symbolic name of ``code``, or ``"UNKNOWN"``."""
    return STATUS_NAMES.get(code, "UNKNOWN")


def describe(code: int) -> str:
    """``code`` with its name, e.g. ``561002 ACLNN_ERR_INNER_TILING_ERROR``."""
    return f"{code} {status_name(code)}"
