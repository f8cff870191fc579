// Package plugin writes Berth scheduler plugins in Go (GOOS=wasip1 GOARCH=wasm, Go 1.24+).
//
// Register a filter (predicate) or a score (priority) from an init function and build the
// main package with -buildmode=c-shared; this package exports the ABI (docs/plugin-abi.md,
// version ABIVersion). The host calls Filter or Score once per chunk of nodes with the pod
// being scheduled; answer for every node of the chunk. Read nodes through Nodes: per-node
// accessors for anything, column accessors (one host call for all nodes) for the hot path.
//
//	func init() { plugin.RegisterFilter(func(config string) (plugin.Filter, error) { ... }) }
//	func main() {}
package plugin

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"unsafe"
)

// ABIVersion is the plugin ABI version this package implements.
const ABIVersion = 1

// Filter is a predicate.
type Filter interface {
	// Filter rejects the nodes that cannot take the pod.
	Filter(pod *Pod, nodes *Nodes, verdicts *Verdicts) error
}

// Score is a priority.
type Score interface {
	// Score sets a raw score per node (scores[i], 0 by default).
	Score(pod *Pod, nodes *Nodes, scores []int64) error
}

// Normalize says how the host turns raw scores into 0..100.
type Normalize int32

const (
	// NormalizeNone: scores are already 0..100 (out-of-range values are clamped).
	NormalizeNone Normalize = 0
	// NormalizeReduce: the highest raw score becomes 100, the rest in proportion.
	NormalizeReduce Normalize = 1
	// NormalizeReduceReverse: the lowest raw score becomes the best.
	NormalizeReduceReverse Normalize = 2
)

var (
	newFilter func(config string) (Filter, error)
	newScore  func(config string) (Score, error)
	normalize Normalize
	filter    Filter
	score     Score
	verdicts  []uint32
	scores    []int64
)

// RegisterFilter makes this module a predicate; make is called once per instance with the
// policy entry's config JSON.
func RegisterFilter(make func(config string) (Filter, error)) { newFilter = make }

// RegisterScore makes this module a priority normalised as n.
func RegisterScore(make func(config string) (Score, error), n Normalize) {
	newScore = make
	normalize = n
}

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

//go:wasmimport berth node_name
func hostNodeName(i int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth node_label
func hostNodeLabel(i int32, key int32) int32

//go:wasmimport berth node_annotation
func hostNodeAnnotation(i int32, kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth node_allocatable
func hostNodeAllocatable(i int32, np unsafe.Pointer, nl int32) int64

//go:wasmimport berth node_requested
func hostNodeRequested(i int32, np unsafe.Pointer, nl int32) int64

//go:wasmimport berth node_pod_count
func hostNodePodCount(i int32) int32

//go:wasmimport berth node_conditions
func hostNodeConditions(i int32) int32

//go:wasmimport berth node_json
func hostNodeJSON(i int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth nodes_label
func hostNodesLabel(key int32, out unsafe.Pointer)

//go:wasmimport berth nodes_annotation
func hostNodesAnnotation(kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32

//go:wasmimport berth reason
func hostReason(ptr unsafe.Pointer, length int32) int32

//go:wasmimport berth set_verdicts
func hostSetVerdicts(ptr unsafe.Pointer)

//go:wasmimport berth set_scores
func hostSetScores(ptr unsafe.Pointer)

// bytesOf gives a pointer and length for a string without copying; a nil pointer for "".
func bytesOf(s string) (unsafe.Pointer, int32) {
	if len(s) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(unsafe.StringData(s)), int32(len(s))
}

// fetch calls a host function that writes a result of unknown length: it returns the full
// length (or -1 when absent) and writes only when the result fits.
func fetch(f func(out unsafe.Pointer, capacity int32) int32) ([]byte, bool) {
	buf := make([]byte, 256)
	for {
		n := f(unsafe.Pointer(&buf[0]), int32(len(buf)))
		if n < 0 {
			return nil, false
		}
		if int(n) <= len(buf) {
			return buf[:n], true
		}
		buf = make([]byte, n)
	}
}

func fetchString(f func(out unsafe.Pointer, capacity int32) int32) (string, bool) {
	b, ok := fetch(f)
	return string(b), ok
}

// Log writes a line to the scheduler's log; level 0 debug, 1 info, 2 warning, 3 error.
func Log(level int32, message string) {
	p, n := bytesOf(message)
	hostLog(level, p, n)
}

// Symbol is a label key or value as the host interns it; 0 means none.
type Symbol uint32

// SymbolOf is the symbol of text, 0 if no object in the cluster uses it.
func SymbolOf(text string) Symbol {
	p, n := bytesOf(text)
	return Symbol(hostIntern(p, n))
}

// Text is the symbol's string.
func (s Symbol) Text() string {
	t, _ := fetchString(func(out unsafe.Pointer, c int32) int32 { return hostSymbol(int32(s), out, c) })
	return t
}

// Pod is the pod being scheduled.
type Pod struct{}

// JSON decodes the pod view (metadata, spec, request) into v.
func (Pod) JSON(v any) error {
	b, _ := fetch(hostPodJSON)
	return json.Unmarshal(b, v)
}

// Annotation is an annotation's value.
func (Pod) Annotation(key string) (string, bool) {
	kp, kl := bytesOf(key)
	return fetchString(func(out unsafe.Pointer, c int32) int32 { return hostPodAnnotation(kp, kl, out, c) })
}

// Label is a label's value.
func (Pod) Label(key string) (string, bool) {
	kp, kl := bytesOf(key)
	return fetchString(func(out unsafe.Pointer, c int32) int32 { return hostPodLabel(kp, kl, out, c) })
}

// Nodes are the nodes of this call, numbered 0..Len()-1.
type Nodes struct{ count int }

// Len is the number of nodes.
func (n *Nodes) Len() int { return n.count }

// Name is node i's name.
func (n *Nodes) Name(i int) string {
	s, _ := fetchString(func(out unsafe.Pointer, c int32) int32 { return hostNodeName(int32(i), out, c) })
	return s
}

// Label is node i's value of label key (0 when absent).
func (n *Nodes) Label(i int, key Symbol) Symbol { return Symbol(hostNodeLabel(int32(i), int32(key))) }

// Annotation is node i's annotation value.
func (n *Nodes) Annotation(i int, key string) (string, bool) {
	kp, kl := bytesOf(key)
	return fetchString(func(out unsafe.Pointer, c int32) int32 {
		return hostNodeAnnotation(int32(i), kp, kl, out, c)
	})
}

// Allocatable is an allocatable quantity of node i (cpu in millicores; pods = capacity).
func (n *Nodes) Allocatable(i int, resource string) int64 {
	p, l := bytesOf(resource)
	return hostNodeAllocatable(int32(i), p, l)
}

// Requested is a quantity requested by the pods on node i (pods = their count).
func (n *Nodes) Requested(i int, resource string) int64 {
	p, l := bytesOf(resource)
	return hostNodeRequested(int32(i), p, l)
}

// PodCount is the number of pods on node i.
func (n *Nodes) PodCount(i int) int { return int(hostNodePodCount(int32(i))) }

// Conditions are node i's condition bits (docs/plugin-abi.md).
func (n *Nodes) Conditions(i int) int32 { return hostNodeConditions(int32(i)) }

// JSON decodes node i's whole view into v.
func (n *Nodes) JSON(i int, v any) error {
	b, _ := fetch(func(out unsafe.Pointer, c int32) int32 { return hostNodeJSON(int32(i), out, c) })
	return json.Unmarshal(b, v)
}

// LabelColumn is every node's value of label key, in one host call (0 = absent).
func (n *Nodes) LabelColumn(key Symbol) []Symbol {
	out := make([]Symbol, n.count)
	if key != 0 && n.count > 0 {
		hostNodesLabel(int32(key), unsafe.Pointer(&out[0]))
	}
	return out
}

// AnnotationColumn is every node's value of annotation key, in one host call; ok[i] is
// false where node i lacks it.
func (n *Nodes) AnnotationColumn(key string) (values []string, ok []bool) {
	kp, kl := bytesOf(key)
	b, _ := fetch(func(out unsafe.Pointer, c int32) int32 { return hostNodesAnnotation(kp, kl, out, c) })
	values = make([]string, n.count)
	ok = make([]bool, n.count)
	for i := 0; i < n.count && len(b) >= (i+1)*8; i++ {
		offset := binary.LittleEndian.Uint32(b[i*8:])
		length := binary.LittleEndian.Uint32(b[i*8+4:])
		if length == ^uint32(0) || int(offset)+int(length) > len(b) {
			continue
		}
		values[i], ok[i] = string(b[offset:offset+length]), true
	}
	return values, ok
}

// Reason is a registered rejection reason.
type Reason uint32

// NewReason registers a reason text (as it should read in the FitError); register each text
// once and reuse it.
func NewReason(text string) Reason {
	p, n := bytesOf(text)
	return Reason(hostReason(p, n))
}

// Verdicts are the filter's answers: every node passes unless rejected.
type Verdicts struct {
	ids      []uint32
	rejected bool
}

// Reject rejects node i for reason r.
func (v *Verdicts) Reject(i int, r Reason) {
	if i >= 0 && i < len(v.ids) {
		v.ids[i] = uint32(r)
		v.rejected = true
	}
}

func setError(err error) int32 {
	p, n := bytesOf(err.Error())
	hostSetError(p, n)
	return 1
}

func config() string {
	s, _ := fetchString(hostConfig)
	return s
}

//go:wasmexport berth_abi_version
func abiVersion() int32 { return ABIVersion }

//go:wasmexport berth_init
func initPlugin() int32 {
	var err error
	switch {
	case newFilter != nil:
		filter, err = newFilter(config())
	case newScore != nil:
		score, err = newScore(config())
		hostSetNormalize(int32(normalize))
	default:
		err = errors.New("the module registered neither a filter nor a score")
	}
	if err != nil {
		return setError(err)
	}
	return 0
}

//go:wasmexport berth_filter
func runFilter(count int32) int32 {
	if filter == nil {
		return setError(errors.New("this module is not a filter plugin"))
	}
	if cap(verdicts) < int(count) {
		verdicts = make([]uint32, count)
	}
	verdicts = verdicts[:count]
	clear(verdicts)
	v := Verdicts{ids: verdicts}
	err := filter.Filter(&Pod{}, &Nodes{count: int(count)}, &v)
	if v.rejected && count > 0 {
		hostSetVerdicts(unsafe.Pointer(&verdicts[0]))
	}
	if err != nil {
		return setError(err)
	}
	return 0
}

//go:wasmexport berth_score
func runScore(count int32) int32 {
	if score == nil {
		return setError(errors.New("this module is not a score plugin"))
	}
	if cap(scores) < int(count) {
		scores = make([]int64, count)
	}
	scores = scores[:count]
	clear(scores)
	err := score.Score(&Pod{}, &Nodes{count: int(count)}, scores)
	if count > 0 {
		hostSetScores(unsafe.Pointer(&scores[0]))
	}
	if err != nil {
		return setError(err)
	}
	return 0
}
