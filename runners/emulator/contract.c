/*
 * A sibling's way to the emulator's internal contract (emu.h; for the twin also libopapi_transformer's fault
 * record, faults.h), compiled into libnnopbase, libopapi_transformer and libprmg_geir (EMU_SIBLING, the twin
 * EMU_TWIN too): a hidden definition of each contract name, forwarding to the function of that name in the
 * library of this library's own folder (dlopen by its path, dlsym on that handle), resolved when this library
 * is loaded. Bound by the dynamic linker instead, each call went to the first definition of the name in the
 * process's global scope: another copy of the emulator loaded there before this one (with RTLD_GLOBAL, in the
 * process or in the parent it was forked from) took every call, and the operator ran on that copy's devices,
 * memory table and error message. The ACL and aclnn names are not the contract: they stay bound as a toolkit's.
 * Printf-style calls are formatted here and handed over as "%s", as the contract keeps EMU_MESSAGE_SIZE bytes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "faults.h"

/* The contract's names (each prmg_emu_<name>), resolved in libascendcl.so; the twin's in libopapi_transformer.so. */
#define RUNTIME_CONTRACT(X) X(current_device) X(leak_device_memory) X(set_error) X(initialized) X(device_range) \
    X(device_range_read) X(stream_valid) X(executor_add) X(executor_take) X(live_executors) X(raise_fault) \
    X(device_usable)
#define FAULT_RECORD(X) X(geir_faults) X(begin_fault_record) X(record_faults)
#define MEMBER(name) __typeof__(prmg_emu_##name) *name;

static struct { RUNTIME_CONTRACT(MEMBER) } runtime;
#ifdef EMU_TWIN
static struct { FAULT_RECORD(MEMBER) } record;
#endif

/* The function `name` of the library `file` in this library's folder; a library or a name missing there is no
 * emulator toolkit: said on stderr, and the process aborts. */
static void *own(const char *file, const char *name)
{
    Dl_info info;
    char path[PATH_MAX];
    if (dladdr((void *)&runtime, &info) == 0 || info.dli_fname == NULL) {
        fprintf(stderr, "prmg emulator: dladdr cannot place this library (looking for %s in %s)\n", name, file);
        abort();
    }
    const char *slash = strrchr(info.dli_fname, '/');
    int folder = slash != NULL ? (int)(slash - info.dli_fname + 1) : 0;
    if (snprintf(path, sizeof path, "%.*s%s", folder, info.dli_fname, file) >= (int)sizeof path) {
        fprintf(stderr, "prmg emulator: the path of %s next to %s is too long\n", file, info.dli_fname);
        abort();
    }
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);      /* the one loaded already, when it is */
    void *function = library != NULL ? dlsym(library, name) : NULL;
    if (function == NULL) {
        fprintf(stderr, "prmg emulator: %s of %s: %s\n", name, path, dlerror());
        abort();
    }
    return function;
}

#define RESOLVE(table, file, name) table.name = (__typeof__(table.name))own(file, "prmg_emu_" #name);
#define RUNTIME(name) RESOLVE(runtime, "libascendcl.so", name)
#define OPAPI(name) RESOLVE(record, "libopapi_transformer.so", name)

__attribute__((constructor)) static void resolve(void)
{
    RUNTIME_CONTRACT(RUNTIME)
#ifdef EMU_TWIN
    FAULT_RECORD(OPAPI)
#endif
}

int prmg_emu_current_device(void)
{
    return runtime.current_device();
}

void prmg_emu_leak_device_memory(size_t bytes)
{
    runtime.leak_device_memory(bytes);
}

void prmg_emu_set_error(const char *format, ...)
{
    char message[EMU_MESSAGE_SIZE];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    runtime.set_error("%s", message);
}

int prmg_emu_initialized(void)
{
    return runtime.initialized();
}

int prmg_emu_device_range(const void *address, size_t length, void **host)
{
    return runtime.device_range(address, length, host);
}

int prmg_emu_device_range_read(const void *address, size_t length, const void **host)
{
    return runtime.device_range_read(address, length, host);
}

int prmg_emu_stream_valid(const void *stream)
{
    return runtime.stream_valid(stream);
}

int prmg_emu_executor_add(const void *executor)
{
    return runtime.executor_add(executor);
}

int prmg_emu_executor_take(const void *executor)
{
    return runtime.executor_take(executor);
}

int prmg_emu_live_executors(void)
{
    return runtime.live_executors();
}

void prmg_emu_raise_fault(int status, const char *format, ...)
{
    char message[EMU_MESSAGE_SIZE];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(message, sizeof message, format, arguments);
    va_end(arguments);
    runtime.raise_fault(status, "%s", message);
}

int prmg_emu_device_usable(const char *function)
{
    return runtime.device_usable(function);
}

#ifdef EMU_TWIN
int prmg_emu_geir_faults(const int64_t *dims, uint64_t dim_count, fault_set *faults)
{
    return record.geir_faults(dims, dim_count, faults);
}

void prmg_emu_begin_fault_record(void)
{
    record.begin_fault_record();
}

void prmg_emu_record_faults(fault_set faults)
{
    record.record_faults(faults);
}
#endif
