//go:build wasip1

// The host functions of docs/plugin-abi.md, imported from the Berth host, and the ABI's
// exports. Pointers are offsets in this module's memory.

package plugin

import "unsafe"

//go:wasmimport berth config
func hostConfig(out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth log
func hostLog(level int32, ptr unsafe.Pointer, length int32)

//go:wasmimport berth set_error
func hostSetError(ptr unsafe.Pointer, length int32)

//go:wasmimport berth set_normalize
func hostSetNormalize(mode int32)

//go:wasmimport berth intern
func hostIntern(ptr unsafe.Pointer, length int32) int32

//go:wasmimport berth symbol
func hostSymbol(sym int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth pod_json
func hostPodJSON(out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth pod_annotation
func hostPodAnnotation(kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth pod_label
func hostPodLabel(kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth pod_request
func hostPodRequest(np unsafe.Pointer, nl int32) int64

//go:wasmimport berth node_name
func hostNodeName(i int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth node_label
func hostNodeLabel(i int32, key int32) int32

//go:wasmimport berth node_annotation
func hostNodeAnnotation(i int32, kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth node_taints
func hostNodeTaints(i int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth node_allocatable
func hostNodeAllocatable(i int32, np unsafe.Pointer, nl int32) int64

//go:wasmimport berth node_requested
func hostNodeRequested(i int32, np unsafe.Pointer, nl int32) int64

//go:wasmimport berth node_pod_count
func hostNodePodCount(i int32) int32

//go:wasmimport berth node_conditions
func hostNodeConditions(i int32) int32

//go:wasmimport berth node_image_size
func hostNodeImageSize(i int32, np unsafe.Pointer, nl int32) int64

//go:wasmimport berth node_pods
func hostNodePods(i int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth node_json
func hostNodeJSON(i int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth nodes_label
func hostNodesLabel(key int32, out unsafe.Pointer)

//go:wasmimport berth nodes_annotation
func hostNodesAnnotation(kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth nodes_name
func hostNodesName(out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth nodes_resource
func hostNodesResource(which int32, np unsafe.Pointer, nl int32, out unsafe.Pointer)

//go:wasmimport berth reason
func hostReason(ptr unsafe.Pointer, length int32) int32

//go:wasmimport berth set_verdicts
func hostSetVerdicts(ptr unsafe.Pointer)

//go:wasmimport berth set_scores
func hostSetScores(ptr unsafe.Pointer)

//go:wasmexport berth_abi_version
func wasmABIVersion() int32 { return ABIVersion }

//go:wasmexport berth_node_local
func wasmNodeLocal() int32 {
	if nodeLocal {
		return 1
	}
	return 0
}

//go:wasmexport berth_init
func wasmInit() int32 { return initPlugin() }

//go:wasmexport berth_filter
func wasmFilter(count int32) int32 { return runFilter(count) }

//go:wasmexport berth_score
func wasmScore(count int32) int32 { return runScore(count) }
