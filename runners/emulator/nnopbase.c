/*
 * libnnopbase.so of the host emulator: aclTensor and aclIntArray descriptors (acl-abi.md "Tensors
 * and arrays"), and aclDestroyAclOpExecutor. Creation copies every array it is given; nothing is
 * validated beyond what is needed to copy (the operators validate dtype, format, strides and shapes).
 */
#include <stdlib.h>
#include <string.h>

#include "emu.h"

EMU_API aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int32_t dataType,
                                   const int64_t *stride, int64_t offset, int32_t format,
                                   const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData)
{
    if (viewDimsNum > EMU_MAX_DIMS || storageDimsNum > EMU_MAX_DIMS
        || (viewDimsNum > 0 && (viewDims == NULL || stride == NULL))
        || (storageDimsNum > 0 && storageDims == NULL)) {
        prmg_emu_set_error("aclCreateTensor: %s",
                           viewDimsNum > EMU_MAX_DIMS || storageDimsNum > EMU_MAX_DIMS
                               ? "too many dimensions"
                               : "a dims or stride array is NULL");
        return NULL;
    }
    aclTensor *tensor = calloc(1, sizeof *tensor);
    if (tensor == NULL) {
        prmg_emu_set_error("aclCreateTensor: out of host memory");
        return NULL;
    }
    tensor->magic = EMU_TENSOR_MAGIC;
    tensor->data_type = dataType;
    tensor->format = format;
    tensor->view_dim_count = viewDimsNum;
    if (viewDimsNum > 0) {
        memcpy(tensor->view_dims, viewDims, viewDimsNum * sizeof *viewDims);
        memcpy(tensor->strides, stride, viewDimsNum * sizeof *stride);
    }
    tensor->offset = offset;
    tensor->storage_dim_count = storageDimsNum;
    if (storageDimsNum > 0)
        memcpy(tensor->storage_dims, storageDims, storageDimsNum * sizeof *storageDims);
    tensor->data = tensorData;
    return tensor;
}

EMU_API int32_t aclDestroyTensor(const aclTensor *tensor)
{
    if (tensor == NULL)
        return ACL_SUCCESS;
    if (tensor->magic != EMU_TENSOR_MAGIC) {
        prmg_emu_set_error("aclDestroyTensor: %p is not a live aclTensor", (const void *)tensor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    ((aclTensor *)tensor)->magic = 0;
    free((aclTensor *)tensor);
    return ACL_SUCCESS;
}

EMU_API aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size)
{
    if (size > 0 && value == NULL) {
        prmg_emu_set_error("aclCreateIntArray: value is NULL with size %llu", (unsigned long long)size);
        return NULL;
    }
    aclIntArray *array = calloc(1, sizeof *array);
    int64_t *values = calloc(size > 0 ? size : 1, sizeof *values);
    if (array == NULL || values == NULL) {
        free(array);
        free(values);
        prmg_emu_set_error("aclCreateIntArray: out of host memory");
        return NULL;
    }
    if (size > 0)
        memcpy(values, value, size * sizeof *value);
    array->magic = EMU_INT_ARRAY_MAGIC;
    array->size = size;
    array->values = values;
    return array;
}

EMU_API int32_t aclDestroyIntArray(const aclIntArray *array)
{
    if (array == NULL)
        return ACL_SUCCESS;
    if (array->magic != EMU_INT_ARRAY_MAGIC) {
        prmg_emu_set_error("aclDestroyIntArray: %p is not a live aclIntArray", (const void *)array);
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclIntArray *owned = (aclIntArray *)array;
    owned->magic = 0;
    free(owned->values);
    free(owned);
    return ACL_SUCCESS;
}

/* Frees an executor that a GetWorkspaceSize (of either operator) made and no launch used. A real
 * nnopbase would free whatever it is given (a launched executor is already freed: a double free);
 * the emulator refuses an unknown, launched or destroyed executor with 161002 and a message. */
EMU_API int32_t aclDestroyAclOpExecutor(aclOpExecutor *executor)
{
    if (executor == NULL) {
        prmg_emu_set_error("aclDestroyAclOpExecutor: executor is a null pointer");
        return ACLNN_ERR_PARAM_NULLPTR;
    }
    if (!prmg_emu_executor_take(executor)) {
        prmg_emu_set_error("aclDestroyAclOpExecutor: executor %p is unknown, already launched or already "
                           "destroyed (a real toolkit would free it again and corrupt memory)", (void *)executor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    free(executor);
    return ACL_SUCCESS;
}
