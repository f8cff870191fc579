// Package plugin writes Berth scheduler plugins in Go (GOOS=wasip1 GOARCH=wasm, Go 1.24+).
//
// Register a filter (predicate) or a score (priority) from an init function and build the
// main package with -buildmode=c-shared; this package exports the ABI (docs/plugin-abi.md,
// version ABIVersion). The host calls Filter or Score once per chunk of nodes with the pod
// being scheduled; answer for every node of the chunk. Read nodes through Nodes: per-node
// accessors for anything, column accessors (one host call for all nodes) for the hot path.
// The policy entry's config arrives decoded into the plugin's own type.
//
//	type config struct{ Label string `json:"label"` }
//	func init() {
//		plugin.RegisterFilter(config{Label: "zone"}, func(c config) (plugin.Filter, error) { ... })
//	}
//	func main() {}
//
// On any GOOS but wasip1 the host functions are served by TestHost, an in-memory host over
// nodes and pods built in the test (FakeNode, FakePod), so `go test` runs the plugin through
// the same code the wasm build does.
package plugin

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// Level is a log level, as the ABI numbers them.
type Level int32

const (
	LevelDebug Level = 0
	LevelInfo  Level = 1
	LevelWarn  Level = 2
	LevelError Level = 3
)

func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	default:
		return "error"
	}
}

var (
	newFilter func(config string) (Filter, error)
	newScore  func(config string) (Score, error)
	normalize Normalize
	nodeLocal bool
	filter    Filter
	score     Score
	verdicts  []uint32
	scores    []int64
)

// DeclareNodeLocal says the plugin's answer about a node follows from that node and the pod
// alone (not from other nodes or where other pods run), so the scheduler may keep it for
// later pods of the same class while the node is unchanged. Call it beside RegisterFilter or
// RegisterScore; without it every pod is asked again.
func DeclareNodeLocal() { nodeLocal = true }

// RegisterFilter makes this module a predicate. make is called once per instance with the
// policy entry's config decoded into a copy of defaults (fields absent from the config keep
// their default; unknown fields are an error). The copy is shallow: keep maps out of
// defaults. Use json.RawMessage as C to decode the config yourself.
func RegisterFilter[C any](defaults C, make func(config C) (Filter, error)) {
	newFilter, newScore = withConfig(defaults, make), nil
}

// RegisterScore makes this module a priority normalised as n; config as RegisterFilter.
func RegisterScore[C any](defaults C, make func(config C) (Score, error), n Normalize) {
	newFilter, newScore, normalize = nil, withConfig(defaults, make), n
}

// withConfig turns a constructor taking a typed config into one taking the config's JSON.
func withConfig[C, P any](defaults C, make func(config C) (P, error)) func(text string) (P, error) {
	return func(text string) (P, error) {
		c, err := ParseConfig(text, defaults)
		if err != nil {
			var none P
			return none, err
		}
		return make(c)
	}
}

// ParseConfig decodes a policy entry's config JSON over a copy of defaults. The error names
// the field that did not match ("config.leadMinutes: expected float64, got string") or says
// what is wrong with the JSON.
func ParseConfig[C any](text string, defaults C) (C, error) {
	c := defaults
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return defaults, configError(err)
	}
	if dec.More() {
		return defaults, errors.New("config: unexpected data after the JSON value")
	}
	return c, nil
}

func configError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return fmt.Errorf("config: expected %v, got %s", typeErr.Type, typeErr.Value)
		}
		return fmt.Errorf("config.%s: expected %v, got %s", typeErr.Field, typeErr.Type, typeErr.Value)
	}
	// encoding/json reports unknown fields only as text.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("config.%s: unknown field", strings.Trim(name, `"`))
	}
	return fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "json: "))
}

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

// decodeColumn decodes a string column: per node (offset, length), then the bytes.
func decodeColumn(b []byte, count int) (values []string, ok []bool) {
	values = make([]string, count)
	ok = make([]bool, count)
	for i := 0; i < count && len(b) >= (i+1)*8; i++ {
		offset := binary.LittleEndian.Uint32(b[i*8:])
		length := binary.LittleEndian.Uint32(b[i*8+4:])
		if length == ^uint32(0) || uint64(offset)+uint64(length) > uint64(len(b)) {
			continue
		}
		values[i], ok[i] = string(b[offset:offset+length]), true
	}
	return values, ok
}

// Log writes a line to the scheduler's log (bounded per call by the host).
func Log(level Level, message string) {
	p, n := bytesOf(message)
	hostLog(int32(level), p, n)
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

// Taint is a node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Effect string `json:"effect"` // NoSchedule, PreferNoSchedule or NoExecute
}

// Toleration is a pod toleration.
type Toleration struct {
	Key      string  `json:"key"`      // "" with Exists tolerates every taint
	Operator string  `json:"operator"` // Equal or Exists
	Value    string  `json:"value"`
	Effect   *string `json:"effect"` // nil tolerates every effect
}

// Tolerates says whether t tolerates taint (Kubernetes' ToleratesTaint).
func (t Toleration) Tolerates(taint Taint) bool {
	if t.Effect != nil && *t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "Exists":
		return true
	case "Equal", "":
		return t.Value == taint.Value
	default:
		return false
	}
}

// PodRef is a pod running on a node.
type PodRef struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels"`
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

// Request is the pod's request of a resource (cpu in millicores, others in base units): per
// resource, the larger of the app containers' sum and any init container, plus overhead.
func (Pod) Request(resource string) int64 {
	p, l := bytesOf(resource)
	return hostPodRequest(p, l)
}

// Tolerations are the pod's tolerations (from its JSON view).
func (p Pod) Tolerations() []Toleration {
	var view struct {
		Spec struct {
			Tolerations []Toleration `json:"tolerations"`
		} `json:"spec"`
	}
	if p.JSON(&view) != nil {
		return nil
	}
	return view.Spec.Tolerations
}

// Conditions are a node's condition bits.
type Conditions int32

const (
	ConditionReady              Conditions = 1
	ConditionMemoryPressure     Conditions = 2
	ConditionDiskPressure       Conditions = 4
	ConditionPIDPressure        Conditions = 8
	ConditionNetworkUnavailable Conditions = 16
	ConditionUnschedulable      Conditions = 32 // spec.unschedulable
)

// Has says whether every bit of other is set.
func (c Conditions) Has(other Conditions) bool { return c&other == other }

// Quantity picks which quantities ResourceColumn reads.
type Quantity int32

const (
	Allocatable Quantity = 0
	Requested   Quantity = 1 // by the pods on the node
)

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

// LabelText is node i's value of label key, as text.
func (n *Nodes) LabelText(i int, key string) (string, bool) {
	k := SymbolOf(key)
	if k == 0 {
		return "", false
	}
	v := n.Label(i, k)
	if v == 0 {
		return "", false
	}
	return v.Text(), true
}

// Annotation is node i's annotation value.
func (n *Nodes) Annotation(i int, key string) (string, bool) {
	kp, kl := bytesOf(key)
	return fetchString(func(out unsafe.Pointer, c int32) int32 {
		return hostNodeAnnotation(int32(i), kp, kl, out, c)
	})
}

// Taints are node i's taints.
func (n *Nodes) Taints(i int) []Taint {
	b, _ := fetch(func(out unsafe.Pointer, c int32) int32 { return hostNodeTaints(int32(i), out, c) })
	var taints []Taint
	if json.Unmarshal(b, &taints) != nil {
		return nil
	}
	return taints
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

// Conditions are node i's condition bits.
func (n *Nodes) Conditions(i int) Conditions { return Conditions(hostNodeConditions(int32(i))) }

// ImageSize is the size in bytes of an image on node i; false if the node lacks it.
func (n *Nodes) ImageSize(i int, image string) (int64, bool) {
	p, l := bytesOf(image)
	size := hostNodeImageSize(int32(i), p, l)
	return size, size >= 0
}

// Pods are the pods running on node i.
func (n *Nodes) Pods(i int) []PodRef {
	b, _ := fetch(func(out unsafe.Pointer, c int32) int32 { return hostNodePods(int32(i), out, c) })
	var pods []PodRef
	if json.Unmarshal(b, &pods) != nil {
		return nil
	}
	return pods
}

// JSON decodes node i's whole view into v.
func (n *Nodes) JSON(i int, v any) error {
	b, _ := fetch(func(out unsafe.Pointer, c int32) int32 { return hostNodeJSON(int32(i), out, c) })
	return json.Unmarshal(b, v)
}

// LabelColumn is every node's value of label key, in one host call (0 = absent). It reuses
// buf when it is large enough: pass the previous result to avoid allocating.
func (n *Nodes) LabelColumn(key Symbol, buf []Symbol) []Symbol {
	out := resize(buf, n.count)
	if key != 0 && n.count > 0 {
		hostNodesLabel(int32(key), unsafe.Pointer(&out[0]))
	}
	return out
}

// ResourceColumn is a quantity of resource on every node, in one host call; buf as in
// LabelColumn.
func (n *Nodes) ResourceColumn(which Quantity, resource string, buf []int64) []int64 {
	out := resize(buf, n.count)
	if n.count > 0 {
		p, l := bytesOf(resource)
		hostNodesResource(int32(which), p, l, unsafe.Pointer(&out[0]))
	}
	return out
}

// AnnotationColumn is every node's value of annotation key, in one host call; ok[i] is
// false where node i lacks it.
func (n *Nodes) AnnotationColumn(key string) (values []string, ok []bool) {
	kp, kl := bytesOf(key)
	b, _ := fetch(func(out unsafe.Pointer, c int32) int32 { return hostNodesAnnotation(kp, kl, out, c) })
	return decodeColumn(b, n.count)
}

// NameColumn is every node's name, in one host call.
func (n *Nodes) NameColumn() []string {
	b, _ := fetch(hostNodesName)
	names, _ := decodeColumn(b, n.count)
	return names
}

// resize gives a zeroed slice of length n, reusing buf's storage when it is large enough.
func resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
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

// Pass lets node i pass again.
func (v *Verdicts) Pass(i int) {
	if i >= 0 && i < len(v.ids) {
		v.ids[i] = 0
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

// initPlugin is berth_init: builds the registered plugin from the config.
func initPlugin() int32 {
	var err error
	switch {
	case newFilter != nil:
		filter, err = newFilter(config())
	case newScore != nil:
		score, err = newScore(config())
		if err == nil {
			hostSetNormalize(int32(normalize))
		}
	default:
		err = errors.New("the module registered neither a filter nor a score")
	}
	if err != nil {
		return setError(err)
	}
	return 0
}

// runFilter is berth_filter.
func runFilter(count int32) int32 {
	if filter == nil {
		return setError(errors.New("this module is not a filter plugin"))
	}
	verdicts = resize(verdicts, int(count))
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

// runScore is berth_score.
func runScore(count int32) int32 {
	if score == nil {
		return setError(errors.New("this module is not a score plugin"))
	}
	scores = resize(scores, int(count))
	err := score.Score(&Pod{}, &Nodes{count: int(count)}, scores)
	if count > 0 {
		hostSetScores(unsafe.Pointer(&scores[0]))
	}
	if err != nil {
		return setError(err)
	}
	return 0
}
