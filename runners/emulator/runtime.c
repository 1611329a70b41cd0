/*
 * libascendcl.so of the host emulator: init/finalize, devices, the SoC name, streams, device memory,
 * pinned host memory, events, the recent error message (acl-abi.md "Runtime"), the process's table of
 * live operator executors (shared by libnnopbase and libopapi_transformer), and the kernel-fault state:
 * a kernel fault is asynchronous, as on a real device (the launch returns 0, the next synchronization
 * reports it) and leaves the process's devices unusable (prmg_emu_raise_fault).
 *
 * Device memory: aclrtMalloc reserves an inaccessible (PROT_NONE) range of address space and hands
 * out its address, so a host dereference of a device address faults; the bytes live in a separate
 * private read-write "shadow" mapping that only aclrtMemcpy, aclrtMemset and the operator reach,
 * through prmg_emu_device_range(). Sizes are rounded up to 512 bytes; bases are page aligned.
 *
 * Each allocation remembers the bytes the last aclrtMemset wrote there and its value, until anything
 * that may write overlaps them (a copy into them, the operator's write access, another memset): a memset
 * of bytes known to hold its value already has nothing to do and returns at once. A real device sets a
 * 16 MiB workspace in microseconds; a host memset of it costs milliseconds on every launch.
 *
 * The shadow mappings of small freed allocations (at most SPARE_MAX_BYTES, SPARE_COUNT of them) are kept and
 * handed to the next allocation of the same mapped size, zeroed, so that it reads as a fresh mapping does: a fresh
 * one page-faults on every page its first copy touches (a small case's three 64.5 KiB buffers, guard zones
 * included, spent ~0.2 ms of the 1 ms a case took in faults). The device address is always a new PROT_NONE one.
 * Shadow mappings of 2 MiB and more ask for transparent huge pages (the 16 MiB workspace's first memset took
 * 8-16 ms in 4096 page faults, 2 ms in huge pages).
 *
 * aclInit opens the NPU driver's libascend_hal.so as the real runtime does (found through LD_LIBRARY_PATH, where
 * set_env.sh puts <driver>/lib64/driver), and goes on without it: the emulator needs no driver, but a test's
 * stand-in driver is then mapped where prmg looks for the driver a run used.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "registry.h"

#define DEVICE_GRANULE 512u
#define MAX_DEVICES 64
#define ACL_EVENT_TIME_LINE 0x8u
#define KNOWN_EVENT_FLAGS 0xFu
#define SOC_NAME_SIZE 128

enum { MEMCPY_HOST_TO_HOST, MEMCPY_HOST_TO_DEVICE, MEMCPY_DEVICE_TO_HOST, MEMCPY_DEVICE_TO_DEVICE };

/* ---- recent error message: per thread, consumed by aclGetRecentErrMsg ---- */

static __thread char pending_message[EMU_MESSAGE_SIZE];
static __thread int message_pending;
static __thread char returned_message[EMU_MESSAGE_SIZE];

EMU_API void prmg_emu_set_error(const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(pending_message, sizeof pending_message, format, arguments);
    va_end(arguments);
    message_pending = 1;
}

EMU_API const char *aclGetRecentErrMsg(void)
{
    if (!message_pending)
        return NULL;
    memcpy(returned_message, pending_message, sizeof returned_message);
    message_pending = 0;
    return returned_message;
}

/* ---- kernel faults: asynchronous, and fatal to the process's devices ---- */

static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static int fault_status;                        /* 0 while no kernel has faulted */
static char fault_message[EMU_MESSAGE_SIZE];

EMU_API void prmg_emu_raise_fault(int status, const char *format, ...)
{
    pthread_mutex_lock(&fault_lock);
    if (fault_status == 0) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(fault_message, sizeof fault_message, format, arguments);
        va_end(arguments);
        fault_status = status;
    }
    pthread_mutex_unlock(&fault_lock);
}

/* The kernel fault's status (0 when none); *message gets its text when there is one. */
static int raised_fault(char message[EMU_MESSAGE_SIZE])
{
    pthread_mutex_lock(&fault_lock);
    int status = fault_status;
    if (status != 0)
        memcpy(message, fault_message, EMU_MESSAGE_SIZE);
    pthread_mutex_unlock(&fault_lock);
    return status;
}

EMU_API int prmg_emu_device_usable(const char *function)
{
    char message[EMU_MESSAGE_SIZE];
    int status = raised_fault(message);
    if (status == 0)
        return ACL_SUCCESS;
    prmg_emu_set_error("%s: the device is unusable after a kernel fault earlier in this process (%d: %s); only "
                       "a new process recovers", function, status, message);
    return ACL_ERROR_RT_DRV_INTERNAL_ERROR;
}

/* What a synchronization returns: the kernel fault's status and message when a kernel faulted. */
static int synchronized(void)
{
    char message[EMU_MESSAGE_SIZE];
    int status = raised_fault(message);
    if (status != 0)
        prmg_emu_set_error("%s", message);
    return status;
}

/* ---- init, devices ---- */

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static int ever_finalized;
static int visible_device_count;
static int device_users[MAX_DEVICES];
static int process_device = -1;           /* the last device set by any thread */
static __thread int thread_device = -1;   /* the calling thread's device, -1 when none */

EMU_API int prmg_emu_initialized(void)
{
    pthread_mutex_lock(&state_lock);
    int result = initialized;
    pthread_mutex_unlock(&state_lock);
    return result;
}

/* Physical devices: PRMG_EMU_DEVICES (default 1, clamped to 0..MAX_DEVICES). */
static int physical_device_count(void)
{
    const char *text = getenv("PRMG_EMU_DEVICES");
    if (text == NULL || *text == '\0')
        return 1;
    char *end;
    long count = strtol(text, &end, 10);
    if (*end != '\0' || count < 0)
        return 1;
    return count > MAX_DEVICES ? MAX_DEVICES : (int)count;
}

/* Visible devices: ASCEND_RT_VISIBLE_DEVICES lists physical ids; like the real runtime the list is
 * read up to its first invalid or repeated entry, and the kept ids are renumbered 0..n-1. */
static int count_visible_devices(void)
{
    int physical = physical_device_count();
    const char *text = getenv("ASCEND_RT_VISIBLE_DEVICES");
    if (text == NULL || *text == '\0')
        return physical;
    int seen[MAX_DEVICES] = {0};
    int visible = 0;
    while (*text != '\0') {
        char *end;
        long id = strtol(text, &end, 10);
        if (end == text || id < 0 || id >= physical || seen[id])
            break;
        seen[id] = 1;
        visible++;
        if (*end != ',')
            break;
        text = end + 1;
    }
    return visible;
}

static void release_all_memory(void);

EMU_API int aclInit(const char *configPath)
{
    (void)configPath;
    pthread_mutex_lock(&state_lock);
    int status = ACL_SUCCESS;
    if (initialized) {
        prmg_emu_set_error("aclInit: ACL is already initialized in this process (aclInit called twice)");
        status = ACL_ERROR_REPEAT_INITIALIZE;
    } else {
        initialized = 1;
        visible_device_count = count_visible_devices();
        static void *driver;                  /* kept open for the process's life, as the runtime keeps it */
        if (driver == NULL)
            driver = dlopen("libascend_hal.so", RTLD_NOW | RTLD_LOCAL);
    }
    pthread_mutex_unlock(&state_lock);
    return status;
}

EMU_API int aclFinalize(void)
{
    pthread_mutex_lock(&state_lock);
    int status = ACL_SUCCESS;
    if (!initialized) {
        status = ever_finalized ? ACL_ERROR_REPEAT_FINALIZE : ACL_ERROR_UNINITIALIZE;
        prmg_emu_set_error("aclFinalize: %s", ever_finalized ? "already finalized" : "aclInit was not called");
    } else {
        initialized = 0;
        ever_finalized = 1;
        memset(device_users, 0, sizeof device_users);
        process_device = -1;
    }
    pthread_mutex_unlock(&state_lock);
    if (status == ACL_SUCCESS) {
        thread_device = -1;
        release_all_memory();
    }
    return status;
}

/* ACL_SUCCESS when initialized, else records why `function` fails and returns 100001. */
static int require_init(const char *function)
{
    if (prmg_emu_initialized())
        return ACL_SUCCESS;
    prmg_emu_set_error("%s: ACL is not initialized (call aclInit first)", function);
    return ACL_ERROR_UNINITIALIZE;
}

EMU_API int prmg_emu_current_device(void)
{
    pthread_mutex_lock(&state_lock);
    int device = thread_device;
    if (device < 0 || device_users[device] == 0)
        device = process_device;
    pthread_mutex_unlock(&state_lock);
    return device;
}

/* ACL_SUCCESS when the calling thread has a device (prmg_emu_current_device) and it is usable
 * (prmg_emu_device_usable); else the status, with a message naming function. */
static int device_ready(const char *function)
{
    if (prmg_emu_current_device() < 0) {
        prmg_emu_set_error("%s: no device context (call aclrtSetDevice first)", function);
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    return prmg_emu_device_usable(function);
}

EMU_API int aclrtGetDeviceCount(uint32_t *count)
{
    int status = require_init("aclrtGetDeviceCount");
    if (status != ACL_SUCCESS)
        return status;
    if (count == NULL) {
        prmg_emu_set_error("aclrtGetDeviceCount: count is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&state_lock);
    *count = (uint32_t)visible_device_count;
    pthread_mutex_unlock(&state_lock);
    return ACL_SUCCESS;
}

/* ACL_SUCCESS when deviceId is a visible device, else 107001 with a message. */
static int check_device_id(const char *function, int32_t deviceId)
{
    if (deviceId >= 0 && deviceId < visible_device_count)
        return ACL_SUCCESS;
    prmg_emu_set_error("%s: invalid device id %d (%d visible device(s))", function, deviceId,
                       visible_device_count);
    return ACL_ERROR_RT_INVALID_DEVICEID;
}

EMU_API int aclrtSetDevice(int32_t deviceId)
{
    int status = require_init("aclrtSetDevice");
    if (status != ACL_SUCCESS)
        return status;
    pthread_mutex_lock(&state_lock);
    status = check_device_id("aclrtSetDevice", deviceId);
    if (status == ACL_SUCCESS) {
        device_users[deviceId]++;
        thread_device = deviceId;
        process_device = deviceId;
    }
    pthread_mutex_unlock(&state_lock);
    return status;
}

EMU_API int aclrtResetDevice(int32_t deviceId)
{
    int status = require_init("aclrtResetDevice");
    if (status != ACL_SUCCESS)
        return status;
    pthread_mutex_lock(&state_lock);
    status = check_device_id("aclrtResetDevice", deviceId);
    if (status == ACL_SUCCESS) {
        if (device_users[deviceId] > 0)
            device_users[deviceId]--;
        if (thread_device == deviceId)
            thread_device = -1;
        if (process_device == deviceId && device_users[deviceId] == 0)
            process_device = -1;
    }
    pthread_mutex_unlock(&state_lock);
    return status;
}

/* ---- SoC name ---- */

static __thread char soc_name[SOC_NAME_SIZE];

/* The SoC name of a real Ascend 950PR board (Ascend950PR_<4 hex digits>, e.g. Ascend950PR_9589), or
 * $PRMG_EMU_SOC when set; NULL with a message before aclInit. The text lives in a per-thread buffer. */
EMU_API const char *aclrtGetSocName(void)
{
    if (require_init("aclrtGetSocName") != ACL_SUCCESS)
        return NULL;
    const char *chosen = getenv("PRMG_EMU_SOC");
    snprintf(soc_name, sizeof soc_name, "%s", chosen != NULL && *chosen != '\0' ? chosen : DEFAULT_SOC_NAME);
    return soc_name;
}

/* ---- streams ---- */

typedef struct {
    int device;
} emu_stream;

static handle_registry live_streams = HANDLE_REGISTRY_INIT;

EMU_API int prmg_emu_stream_valid(const void *stream)
{
    return stream == NULL || registry_contains(&live_streams, stream);
}

EMU_API int aclrtCreateStream(void **stream)
{
    int status = require_init("aclrtCreateStream");
    if (status != ACL_SUCCESS)
        return status;
    if (stream == NULL) {
        prmg_emu_set_error("aclrtCreateStream: stream is NULL");
        return ACL_ERROR_INVALID_PARAM;
    }
    status = device_ready("aclrtCreateStream");
    if (status != ACL_SUCCESS)
        return status;
    emu_stream *created = calloc(1, sizeof *created);
    if (created == NULL || registry_add(&live_streams, created) != 0) {
        free(created);
        prmg_emu_set_error("aclrtCreateStream: out of host memory");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    created->device = prmg_emu_current_device();
    *stream = created;
    return ACL_SUCCESS;
}

/* ACL_SUCCESS when stream is NULL or live, else 100000 with a message naming function. */
static int check_stream(const char *function, const void *stream)
{
    if (prmg_emu_stream_valid(stream))
        return ACL_SUCCESS;
    prmg_emu_set_error("%s: stream %p is not a live stream", function, stream);
    return ACL_ERROR_INVALID_PARAM;
}

EMU_API int aclrtDestroyStream(void *stream)
{
    int status = require_init("aclrtDestroyStream");
    if (status != ACL_SUCCESS)
        return status;
    if (stream == NULL || !registry_remove(&live_streams, stream)) {
        prmg_emu_set_error("aclrtDestroyStream: stream %p is not a live stream", stream);
        return ACL_ERROR_INVALID_PARAM;
    }
    free(stream);
    return ACL_SUCCESS;
}

/* Operators run to completion inside their launch call, so a stream never has pending work; but a
 * kernel fault is reported here (by every synchronization after it), not by the launch. */
EMU_API int aclrtSynchronizeStream(void *stream)
{
    int status = require_init("aclrtSynchronizeStream");
    if (status == ACL_SUCCESS)
        status = check_stream("aclrtSynchronizeStream", stream);
    return status != ACL_SUCCESS ? status : synchronized();
}

/* ---- device memory ---- */

typedef struct {
    uintptr_t device;   /* the address handed out (inaccessible) */
    size_t size;        /* requested size rounded up to DEVICE_GRANULE */
    size_t mapped;      /* size rounded up to pages */
    unsigned char *host;
    size_t filled_offset, filled_count;   /* bytes the last aclrtMemset set to filled_value (count 0: none) */
    int filled_value;
} allocation;

static pthread_mutex_t memory_lock = PTHREAD_MUTEX_INITIALIZER;
static allocation *allocations;
static size_t allocation_count;
static size_t allocation_capacity;
static size_t allocated_bytes;            /* the sizes of the live allocations */
static size_t leaked_bytes;               /* taken for good by the leak_device_memory fault */

#define SPARE_MAX_BYTES ((size_t)1 << 20)
#define HUGE_PAGE_BYTES ((size_t)2 << 20)
#define SPARE_COUNT 16
typedef struct {
    unsigned char *host;
    size_t mapped;
} spare_shadow;
static spare_shadow spares[SPARE_COUNT];  /* freed small shadow mappings (memory_lock) */
static size_t spare_count;

#define DEFAULT_DEVICE_MEMORY ((size_t)64 << 30)

/* The device's memory in bytes: PRMG_EMU_DEVICE_MEMORY (a byte count, or with a K, M or G suffix), default 64 GiB
 * (what an Ascend 950 chip's HBM holds, in round numbers); anything else is the default. */
static size_t device_memory(void)
{
    const char *text = getenv("PRMG_EMU_DEVICE_MEMORY");
    if (text == NULL || *text == '\0')
        return DEFAULT_DEVICE_MEMORY;
    char *end;
    unsigned long long count = strtoull(text, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (end == text || (shift && *++end != '\0') || *end != '\0' || count > (SIZE_MAX >> shift))
        return DEFAULT_DEVICE_MEMORY;
    return (size_t)count << shift;
}

EMU_API void prmg_emu_leak_device_memory(size_t bytes)
{
    pthread_mutex_lock(&memory_lock);
    leaked_bytes += bytes;
    pthread_mutex_unlock(&memory_lock);
}

/* Index of the allocation holding address, or -1. Caller holds memory_lock. */
static long find_allocation(uintptr_t address)
{
    for (size_t i = 0; i < allocation_count; i++) {
        if (address >= allocations[i].device && address - allocations[i].device < allocations[i].size)
            return (long)i;
    }
    return -1;
}

/* prmg_emu_device_range for a caller that writes (forgets a memset record the range overlaps) or only reads. */
static int device_range(const void *address, size_t length, void **host, int writes)
{
    uintptr_t start = (uintptr_t)address;
    int result;
    pthread_mutex_lock(&memory_lock);
    long index = find_allocation(start);
    if (index < 0) {
        result = -1;
    } else if (length > allocations[index].size - (start - allocations[index].device)) {
        result = -2;
    } else {
        allocation *found = &allocations[index];
        size_t offset = start - found->device;
        *host = found->host + offset;
        if (writes && offset < found->filled_offset + found->filled_count && found->filled_offset < offset + length)
            found->filled_count = 0;
        result = 0;
    }
    pthread_mutex_unlock(&memory_lock);
    return result;
}

EMU_API int prmg_emu_device_range(const void *address, size_t length, void **host)
{
    return device_range(address, length, host, 1);
}

EMU_API int prmg_emu_device_range_read(const void *address, size_t length, const void **host)
{
    return device_range(address, length, (void **)host, 0);
}

/* Whether aclrtMemset must write: not when [address, +count) lie inside the bytes the allocation's last
 * memset set to value. When it must, those bytes become the allocation's record (the caller writes them). */
static int memset_needed(const void *address, size_t count, int value)
{
    pthread_mutex_lock(&memory_lock);
    allocation *found = &allocations[find_allocation((uintptr_t)address)];
    size_t offset = (uintptr_t)address - found->device;
    int needed = !(found->filled_count && found->filled_value == value && offset >= found->filled_offset
                   && offset + count <= found->filled_offset + found->filled_count);
    if (needed) {
        found->filled_offset = offset;
        found->filled_count = count;
        found->filled_value = value;
    }
    pthread_mutex_unlock(&memory_lock);
    return needed;
}

static int is_device_address(const void *address)
{
    pthread_mutex_lock(&memory_lock);
    int found = find_allocation((uintptr_t)address) >= 0;
    pthread_mutex_unlock(&memory_lock);
    return found;
}

static void unmap_allocation(const allocation *victim)
{
    munmap((void *)victim->device, victim->mapped);
    munmap(victim->host, victim->mapped);
}

/* A kept shadow mapping of `mapped` bytes, zeroed, or NULL when none is kept (the caller maps a new one). */
static unsigned char *spare_shadow_of(size_t mapped)
{
    unsigned char *host = NULL;
    pthread_mutex_lock(&memory_lock);
    for (size_t i = 0; i < spare_count; i++) {
        if (spares[i].mapped == mapped) {
            host = spares[i].host;
            spares[i] = spares[--spare_count];
            break;
        }
    }
    pthread_mutex_unlock(&memory_lock);
    if (host != NULL)
        memset(host, 0, mapped);
    return host;
}

/* Unmap a freed allocation, keeping its shadow mapping for spare_shadow_of when it is small (when SPARE_COUNT are
 * kept already, one of them, in turn, makes room for it). */
static void release_allocation(const allocation *victim)
{
    static size_t evicted;
    spare_shadow unmapped = {victim->host, victim->mapped};
    munmap((void *)victim->device, victim->mapped);
    if (victim->mapped <= SPARE_MAX_BYTES) {
        pthread_mutex_lock(&memory_lock);
        if (spare_count < SPARE_COUNT) {
            spares[spare_count++] = unmapped;
            unmapped.host = NULL;
        } else {
            size_t slot = evicted++ % SPARE_COUNT;
            spare_shadow kept = spares[slot];
            spares[slot] = unmapped;
            unmapped = kept;
        }
        pthread_mutex_unlock(&memory_lock);
    }
    if (unmapped.host != NULL)
        munmap(unmapped.host, unmapped.mapped);
}

static void release_all_memory(void)
{
    pthread_mutex_lock(&memory_lock);
    for (size_t i = 0; i < allocation_count; i++)
        unmap_allocation(&allocations[i]);
    allocation_count = 0;
    for (size_t i = 0; i < spare_count; i++)
        munmap(spares[i].host, spares[i].mapped);
    spare_count = 0;
    allocated_bytes = 0;
    leaked_bytes = 0;                     /* the process's device context is gone, its leaks with it */
    pthread_mutex_unlock(&memory_lock);
}

EMU_API int aclrtMalloc(void **devPtr, size_t size, int policy)
{
    (void)policy;
    int status = require_init("aclrtMalloc");
    if (status != ACL_SUCCESS)
        return status;
    if (devPtr == NULL || size == 0) {
        prmg_emu_set_error("aclrtMalloc: %s", devPtr == NULL ? "devPtr is NULL" : "size is 0");
        return ACL_ERROR_INVALID_PARAM;
    }
    status = device_ready("aclrtMalloc");
    if (status != ACL_SUCCESS)
        return status;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - page) {
        prmg_emu_set_error("aclrtMalloc: size %zu is too large", size);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    allocation created = {0, 0, 0, NULL, 0, 0, 0};
    created.size = (size + DEVICE_GRANULE - 1) / DEVICE_GRANULE * DEVICE_GRANULE;
    created.mapped = (size + page - 1) / page * page;
    size_t capacity = device_memory();
    pthread_mutex_lock(&memory_lock);
    size_t used = allocated_bytes + leaked_bytes;
    int fits = used <= capacity && created.size <= capacity - used;
    pthread_mutex_unlock(&memory_lock);
    if (!fits)                /* as the runtime of an NPU host did: its reason goes to the log, not to the message */
        return ACL_ERROR_BAD_ALLOC;
    void *device = mmap(NULL, created.mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *host = spare_shadow_of(created.mapped);
    if (host == NULL) {
        host = mmap(NULL, created.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (host != MAP_FAILED && created.mapped >= HUGE_PAGE_BYTES)
            madvise(host, created.mapped, MADV_HUGEPAGE);      /* advice: ignored where THP is off */
    }
    if (device == MAP_FAILED || host == MAP_FAILED) {
        if (device != MAP_FAILED)
            munmap(device, created.mapped);
        if (host != MAP_FAILED)
            munmap(host, created.mapped);
        prmg_emu_set_error("aclrtMalloc: cannot allocate %zu bytes: %s", size, strerror(errno));
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    created.device = (uintptr_t)device;
    created.host = host;
    pthread_mutex_lock(&memory_lock);
    if (allocation_count == allocation_capacity) {
        size_t capacity = allocation_capacity ? allocation_capacity * 2 : 64;
        allocation *grown = realloc(allocations, capacity * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&memory_lock);
            unmap_allocation(&created);
            prmg_emu_set_error("aclrtMalloc: out of host memory for the allocation table");
            return ACL_ERROR_RT_MEMORY_ALLOCATION;
        }
        allocations = grown;
        allocation_capacity = capacity;
    }
    allocations[allocation_count++] = created;
    allocated_bytes += created.size;
    pthread_mutex_unlock(&memory_lock);
    *devPtr = device;
    return ACL_SUCCESS;
}

EMU_API int aclrtFree(void *devPtr)
{
    int status = require_init("aclrtFree");
    if (status != ACL_SUCCESS)
        return status;
    pthread_mutex_lock(&memory_lock);
    long index = find_allocation((uintptr_t)devPtr);
    allocation victim = {0, 0, 0, NULL, 0, 0, 0};
    if (index >= 0 && allocations[index].device == (uintptr_t)devPtr) {
        victim = allocations[index];
        allocations[index] = allocations[--allocation_count];
        allocated_bytes -= victim.size;
    }
    pthread_mutex_unlock(&memory_lock);
    if (victim.host == NULL) {
        prmg_emu_set_error("aclrtFree: %p is not the base address of a live device allocation", devPtr);
        return ACL_ERROR_INVALID_PARAM;
    }
    release_allocation(&victim);
    return ACL_SUCCESS;
}

enum { ACL_DDR_MEM, ACL_HBM_MEM, ACL_DDR_MEM_HUGE, ACL_DDR_MEM_NORMAL, ACL_HBM_MEM_HUGE, ACL_HBM_MEM_NORMAL };

/* The current device's memory of kind `attr`: HBM (huge and normal pages together) is PRMG_EMU_DEVICE_MEMORY, of
 * which the live allocations and the leaked bytes are used; the emulated chip has no DDR (0 and 0). */
EMU_API int aclrtGetMemInfo(int attr, size_t *free_bytes, size_t *total_bytes)
{
    int status = require_init("aclrtGetMemInfo");
    if (status != ACL_SUCCESS)
        return status;
    if (free_bytes == NULL || total_bytes == NULL || attr < ACL_DDR_MEM || attr > ACL_HBM_MEM_NORMAL) {
        prmg_emu_set_error("aclrtGetMemInfo: %s", free_bytes == NULL || total_bytes == NULL
                           ? "free or total is NULL" : "attr is no memory kind of the device");
        return ACL_ERROR_INVALID_PARAM;
    }
    status = device_ready("aclrtGetMemInfo");
    if (status != ACL_SUCCESS)
        return status;
    int hbm = attr == ACL_HBM_MEM || attr == ACL_HBM_MEM_HUGE || attr == ACL_HBM_MEM_NORMAL;
    size_t total = hbm ? device_memory() : 0;
    pthread_mutex_lock(&memory_lock);
    size_t used = allocated_bytes + leaked_bytes;
    pthread_mutex_unlock(&memory_lock);
    *total_bytes = total;
    *free_bytes = used < total ? total - used : 0;
    return ACL_SUCCESS;
}

/* Host view of device bytes [address, address + count) for `function`'s `role` argument, which `writes`
 * them or only reads; NULL with a message when the range is not wholly inside one live allocation. */
static void *device_bytes(const char *function, const char *role, const void *address, size_t count, int writes)
{
    void *host = NULL;
    int found = device_range(address, count, &host, writes);
    if (found == -1)
        prmg_emu_set_error("%s: %s %p is not device memory from aclrtMalloc", function, role, address);
    else if (found == -2)
        prmg_emu_set_error("%s: %s range [%p, +%zu bytes) runs past the end of its device allocation",
                           function, role, address, count);
    return host;
}

/* address itself as a host pointer; NULL with a message when it is device memory. */
static void *host_bytes(const char *function, const char *role, const void *address)
{
    if (!is_device_address(address))
        return (void *)address;
    prmg_emu_set_error("%s: %s %p is device memory but the copy kind says host", function, role, address);
    return NULL;
}

EMU_API int aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind)
{
    static const char *const kind_names[] = {"ACL_MEMCPY_HOST_TO_HOST", "ACL_MEMCPY_HOST_TO_DEVICE",
                                             "ACL_MEMCPY_DEVICE_TO_HOST", "ACL_MEMCPY_DEVICE_TO_DEVICE"};
    int status = require_init("aclrtMemcpy");
    if (status != ACL_SUCCESS)
        return status;
    if (kind < MEMCPY_HOST_TO_HOST || kind > MEMCPY_DEVICE_TO_DEVICE) {
        prmg_emu_set_error("aclrtMemcpy: unknown copy kind %d", kind);
        return ACL_ERROR_INVALID_PARAM;
    }
    char function[64];
    snprintf(function, sizeof function, "aclrtMemcpy(%s)", kind_names[kind]);
    if (dst == NULL || src == NULL) {
        prmg_emu_set_error("%s: %s is NULL", function, dst == NULL ? "dst" : "src");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (count > destMax) {
        prmg_emu_set_error("%s: count %zu exceeds destMax %zu", function, count, destMax);
        return ACL_ERROR_INVALID_PARAM;
    }
    int dst_on_device = kind == MEMCPY_HOST_TO_DEVICE || kind == MEMCPY_DEVICE_TO_DEVICE;
    int src_on_device = kind == MEMCPY_DEVICE_TO_HOST || kind == MEMCPY_DEVICE_TO_DEVICE;
    if (dst_on_device || src_on_device) {
        status = prmg_emu_device_usable(function);
        if (status != ACL_SUCCESS)
            return status;
    }
    void *to = dst_on_device ? device_bytes(function, "dst", dst, count, 1) : host_bytes(function, "dst", dst);
    if (to == NULL)
        return ACL_ERROR_INVALID_PARAM;
    const void *from = src_on_device ? device_bytes(function, "src", src, count, 0) : host_bytes(function, "src", src);
    if (from == NULL)
        return ACL_ERROR_INVALID_PARAM;
    memmove(to, from, count);
    return ACL_SUCCESS;
}

EMU_API int aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    int status = require_init("aclrtMemset");
    if (status != ACL_SUCCESS)
        return status;
    if (devPtr == NULL || count > maxCount) {
        if (devPtr == NULL)
            prmg_emu_set_error("aclrtMemset: devPtr is NULL");
        else
            prmg_emu_set_error("aclrtMemset: count %zu exceeds maxCount %zu", count, maxCount);
        return ACL_ERROR_INVALID_PARAM;
    }
    status = prmg_emu_device_usable("aclrtMemset");
    if (status != ACL_SUCCESS)
        return status;
    void *to = device_bytes("aclrtMemset", "devPtr", devPtr, count, 0);
    if (to == NULL)
        return ACL_ERROR_INVALID_PARAM;
    if (memset_needed(devPtr, count, (unsigned char)value))
        memset(to, value, count);
    return ACL_SUCCESS;
}

/* ---- pinned host memory ---- */

typedef struct {
    void *address;
    size_t mapped;
} pinned_block;

static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static pinned_block *pinned_blocks;
static size_t pinned_count;
static size_t pinned_capacity;

/* Records block in the pinned table; 0, or -1 when out of host memory. */
static int add_pinned(pinned_block block)
{
    int result = 0;
    pthread_mutex_lock(&pinned_lock);
    if (pinned_count == pinned_capacity) {
        size_t capacity = pinned_capacity ? pinned_capacity * 2 : 16;
        pinned_block *grown = realloc(pinned_blocks, capacity * sizeof *grown);
        if (grown == NULL) {
            result = -1;
        } else {
            pinned_blocks = grown;
            pinned_capacity = capacity;
        }
    }
    if (result == 0)
        pinned_blocks[pinned_count++] = block;
    pthread_mutex_unlock(&pinned_lock);
    return result;
}

/* Page-aligned, zero-filled host memory of `size` bytes. Ordinary host memory for aclrtMemcpy (a host
 * source or destination), kept until aclrtFreeHost (aclFinalize leaves it). */
EMU_API int aclrtMallocHost(void **hostPtr, size_t size)
{
    int status = require_init("aclrtMallocHost");
    if (status != ACL_SUCCESS)
        return status;
    if (hostPtr == NULL || size == 0) {
        prmg_emu_set_error("aclrtMallocHost: %s", hostPtr == NULL ? "hostPtr is NULL" : "size is 0");
        return ACL_ERROR_INVALID_PARAM;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - page) {
        prmg_emu_set_error("aclrtMallocHost: size %zu is too large", size);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    pinned_block block = {NULL, (size + page - 1) / page * page};
    block.address = mmap(NULL, block.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block.address == MAP_FAILED) {
        prmg_emu_set_error("aclrtMallocHost: cannot allocate %zu bytes: %s", size, strerror(errno));
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    if (add_pinned(block) != 0) {
        munmap(block.address, block.mapped);
        prmg_emu_set_error("aclrtMallocHost: out of host memory for the pinned table");
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    *hostPtr = block.address;
    return ACL_SUCCESS;
}

/* Frees memory from aclrtMallocHost; any other pointer (or one already freed) -> 100000. */
EMU_API int aclrtFreeHost(void *hostPtr)
{
    int status = require_init("aclrtFreeHost");
    if (status != ACL_SUCCESS)
        return status;
    pinned_block victim = {NULL, 0};
    pthread_mutex_lock(&pinned_lock);
    for (size_t i = 0; i < pinned_count; i++) {
        if (pinned_blocks[i].address == hostPtr && hostPtr != NULL) {
            victim = pinned_blocks[i];
            pinned_blocks[i] = pinned_blocks[--pinned_count];
            break;
        }
    }
    pthread_mutex_unlock(&pinned_lock);
    if (victim.address == NULL) {
        prmg_emu_set_error("aclrtFreeHost: %p is not host memory from aclrtMallocHost", hostPtr);
        return ACL_ERROR_INVALID_PARAM;
    }
    munmap(victim.address, victim.mapped);
    return ACL_SUCCESS;
}

/* ---- operator executors (one table for both operators and aclDestroyAclOpExecutor) ---- */

static handle_registry live_executors = HANDLE_REGISTRY_INIT;

EMU_API int prmg_emu_executor_add(const void *executor)
{
    return registry_add(&live_executors, executor);
}

EMU_API int prmg_emu_executor_take(const void *executor)
{
    return executor != NULL && registry_remove(&live_executors, executor);
}

EMU_API int prmg_emu_live_executors(void)
{
    pthread_mutex_lock(&live_executors.lock);
    int count = (int)live_executors.count;
    pthread_mutex_unlock(&live_executors.lock);
    return count;
}

/* ---- events ---- */

typedef struct {
    int timeline;           /* elapsed time may be asked for */
    int recorded;
    struct timespec stamp;  /* CLOCK_MONOTONIC at the last record */
} emu_event;

static handle_registry live_events = HANDLE_REGISTRY_INIT;

static int create_event(const char *function, void **event, int timeline)
{
    int status = require_init(function);
    if (status != ACL_SUCCESS)
        return status;
    if (event == NULL) {
        prmg_emu_set_error("%s: event is NULL", function);
        return ACL_ERROR_INVALID_PARAM;
    }
    status = device_ready(function);
    if (status != ACL_SUCCESS)
        return status;
    emu_event *created = calloc(1, sizeof *created);
    if (created == NULL || registry_add(&live_events, created) != 0) {
        free(created);
        prmg_emu_set_error("%s: out of host memory", function);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    created->timeline = timeline;
    *event = created;
    return ACL_SUCCESS;
}

EMU_API int aclrtCreateEvent(void **event)
{
    return create_event("aclrtCreateEvent", event, 1);
}

EMU_API int aclrtCreateEventWithFlag(void **event, uint32_t flag)
{
    if ((flag & ~KNOWN_EVENT_FLAGS) != 0) {
        prmg_emu_set_error("aclrtCreateEventWithFlag: unknown flag 0x%x", flag);
        return ACL_ERROR_INVALID_PARAM;
    }
    return create_event("aclrtCreateEventWithFlag", event, (flag & ACL_EVENT_TIME_LINE) != 0);
}

/* ACL_SUCCESS when event is live, else 100000 with a message naming function. */
static int check_event(const char *function, const void *event)
{
    int status = require_init(function);
    if (status != ACL_SUCCESS)
        return status;
    if (event != NULL && registry_contains(&live_events, event))
        return ACL_SUCCESS;
    prmg_emu_set_error("%s: event %p is not a live event", function, event);
    return ACL_ERROR_INVALID_PARAM;
}

EMU_API int aclrtRecordEvent(void *event, void *stream)
{
    int status = check_event("aclrtRecordEvent", event);
    if (status == ACL_SUCCESS)
        status = check_stream("aclrtRecordEvent", stream);
    if (status != ACL_SUCCESS)
        return status;
    emu_event *recorded = event;
    clock_gettime(CLOCK_MONOTONIC, &recorded->stamp);
    recorded->recorded = 1;
    return ACL_SUCCESS;
}

EMU_API int aclrtSynchronizeEvent(void *event)
{
    int status = check_event("aclrtSynchronizeEvent", event);
    return status != ACL_SUCCESS ? status : synchronized();
}

EMU_API int aclrtDestroyEvent(void *event)
{
    int status = check_event("aclrtDestroyEvent", event);
    if (status != ACL_SUCCESS)
        return status;
    registry_remove(&live_events, event);
    free(event);
    return ACL_SUCCESS;
}

EMU_API int aclrtEventElapsedTime(float *ms, void *start, void *end)
{
    int status = check_event("aclrtEventElapsedTime", start);
    if (status == ACL_SUCCESS)
        status = check_event("aclrtEventElapsedTime", end);
    if (status != ACL_SUCCESS)
        return status;
    const emu_event *first = start, *last = end;
    if (ms == NULL || !first->timeline || !last->timeline || !first->recorded || !last->recorded) {
        prmg_emu_set_error("aclrtEventElapsedTime: %s",
                           ms == NULL ? "ms is NULL"
                           : !first->timeline || !last->timeline
                               ? "events need ACL_EVENT_TIME_LINE (aclrtCreateEventWithFlag 0x8)"
                               : "both events must be recorded");
        return ACL_ERROR_INVALID_PARAM;
    }
    double seconds = (double)(last->stamp.tv_sec - first->stamp.tv_sec)
                     + (double)(last->stamp.tv_nsec - first->stamp.tv_nsec) * 1e-9;
    *ms = (float)(seconds * 1e3);
    return ACL_SUCCESS;
}
