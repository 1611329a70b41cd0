/*
 * A thread-safe set of live handles (streams, events, executors), so that a stale or foreign handle
 * is refused with a status instead of being dereferenced.
 */
#ifndef PRMG_EMU_REGISTRY_H
#define PRMG_EMU_REGISTRY_H

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    pthread_mutex_t lock;
    const void **items;
    size_t count;
    size_t capacity;
} handle_registry;

#define HANDLE_REGISTRY_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0}

/* Adds handle; 0 on success, -1 when out of memory. */
static inline int registry_add(handle_registry *registry, const void *handle)
{
    int result = 0;
    pthread_mutex_lock(&registry->lock);
    if (registry->count == registry->capacity) {
        size_t capacity = registry->capacity ? registry->capacity * 2 : 16;
        const void **items = realloc(registry->items, capacity * sizeof *items);
        if (items == NULL) {
            result = -1;
        } else {
            registry->items = items;
            registry->capacity = capacity;
        }
    }
    if (result == 0)
        registry->items[registry->count++] = handle;
    pthread_mutex_unlock(&registry->lock);
    return result;
}

/* Removes handle; 1 when it was live, 0 otherwise. */
static inline int registry_remove(handle_registry *registry, const void *handle)
{
    int found = 0;
    pthread_mutex_lock(&registry->lock);
    for (size_t i = 0; i < registry->count; i++) {
        if (registry->items[i] == handle) {
            registry->items[i] = registry->items[--registry->count];
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&registry->lock);
    return found;
}

/* 1 when handle is live. */
static inline int registry_contains(handle_registry *registry, const void *handle)
{
    int found = 0;
    pthread_mutex_lock(&registry->lock);
    for (size_t i = 0; i < registry->count && !found; i++)
        found = registry->items[i] == handle;
    pthread_mutex_unlock(&registry->lock);
    return found;
}

#endif
