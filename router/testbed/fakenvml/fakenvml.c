/*
 * A stand-in for NVIDIA's NVML library (libnvidia-ml.so.1) for tests on machines without an NVIDIA
 * GPU: it exports the NVML functions Llamatray's memory probe calls (router/mem/nvml.go), with
 * NVML's own signatures, struct layouts and return codes, and reports the GPUs described by the
 * environment variable FAKE_NVML_GPUS: "name:totalMiB:freeMiB" entries separated by ';', e.g.
 * "NVIDIA GeForce RTX 4090:24564:20000;NVIDIA RTX A4000:16376:16000". FAKE_NVML_INIT, when set,
 * is the code nvmlInit_v2 returns (9 = NVML_ERROR_DRIVER_NOT_LOADED, as on a machine whose driver
 * is not loaded).
 *
 * Build: gcc -shared -fPIC -o libnvidia-ml.so.1 fakenvml.c (the test in router/mem does).
 *
 * From NVIDIA's nvml.h (the layouts Llamatray relies on):
 *   typedef enum nvmlReturn_enum { NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1,
 *       NVML_ERROR_INVALID_ARGUMENT = 2, NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NO_PERMISSION = 4,
 *       NVML_ERROR_ALREADY_INITIALIZED = 5, NVML_ERROR_NOT_FOUND = 6,
 *       NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_DRIVER_NOT_LOADED = 9, ...,
 *       NVML_ERROR_UNKNOWN = 999 } nvmlReturn_t;                  (a C enum: 32 bits)
 *   typedef struct nvmlDevice_st *nvmlDevice_t;                  (an opaque handle)
 *   typedef struct nvmlMemory_st { unsigned long long total, free, used; } nvmlMemory_t;  (bytes)
 *   nvmlReturn_t nvmlInit_v2(void);
 *   nvmlReturn_t nvmlShutdown(void);
 *   nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
 *   nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
 *   nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
 *   nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
 *   NVML_DEVICE_NAME_V2_BUFFER_SIZE is 96.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7

#define MAX_GPUS 16

struct nvmlDevice_st {
    char name[96];
    unsigned long long total, free;
};

static struct nvmlDevice_st gpus[MAX_GPUS];
static unsigned int ngpus;
static int inits; /* nvmlInit_v2 calls not yet shut down */

/* parse reads FAKE_NVML_GPUS into gpus. */
static void parse(void) {
    const char *env = getenv("FAKE_NVML_GPUS");
    ngpus = 0;
    if (env == NULL) {
        return;
    }
    char *copy = strdup(env), *save = NULL;
    for (char *tok = strtok_r(copy, ";", &save); tok != NULL && ngpus < MAX_GPUS; tok = strtok_r(NULL, ";", &save)) {
        char *free_s = strrchr(tok, ':');
        if (free_s == NULL) {
            continue;
        }
        *free_s++ = '\0';
        char *total_s = strrchr(tok, ':');
        if (total_s == NULL) {
            continue;
        }
        *total_s++ = '\0';
        struct nvmlDevice_st *g = &gpus[ngpus++];
        snprintf(g->name, sizeof g->name, "%s", tok);
        g->total = strtoull(total_s, NULL, 10) << 20;
        g->free = strtoull(free_s, NULL, 10) << 20;
    }
    free(copy);
}

nvmlReturn_t nvmlInit_v2(void) {
    const char *code = getenv("FAKE_NVML_INIT");
    if (code != NULL && *code != '\0') {
        return atoi(code);
    }
    parse();
    inits++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    if (inits == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    inits--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    if (inits == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (deviceCount == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    parse(); /* the figures a test set last */
    *deviceCount = ngpus;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (inits == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (device == NULL || index >= ngpus) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    *device = &gpus[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    if (inits == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (device == NULL || name == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (strlen(device->name) + 1 > length) {
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    strcpy(name, device->name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    if (inits == 0) {
        return NVML_ERROR_UNINITIALIZED;
    }
    if (device == NULL || memory == NULL) {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    memory->total = device->total;
    memory->free = device->free;
    memory->used = device->total - device->free;
    return NVML_SUCCESS;
}
