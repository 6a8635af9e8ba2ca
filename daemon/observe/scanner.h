/* scanner.h: the kernel readers (bpf, ptrace): one pass into a Forest, asked with ScanOptions */
#pragma once

#include "observe/listeners.h"
#include "observe/scan-bpf.h"
#include "observe/scan-options.h"
#include "observe/scan-ptrace.h"
