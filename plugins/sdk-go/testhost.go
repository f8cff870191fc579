//go:build !wasip1

// An in-memory host for `go test` (any GOOS but wasip1): the host functions of
// docs/plugin-abi.md with the same names and signatures as the wasm imports, answered from
// nodes and pods built in the test. The rules are the wasm host's: symbols exist only for
// strings the cluster uses, node and pod accessors work only inside a call, a bad node index
// or unknown reason id traps. A trap or a panic in the plugin comes back as a *CallError
// with Trap set; an error the plugin returned, with Trap unset.

package plugin

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// FakeNode is a node for TestHost. Build it with NewFakeNode and the chained setters.
type FakeNode struct {
	name        string
	labels      map[string]string
	annotations map[string]string
	taints      []Taint
	allocatable map[string]int64
	conditions  Conditions
	images      []fakeImage
	pods        []*FakePod
	podCIDRs    []string
}

type fakeImage struct {
	name string
	size int64
}

// NewFakeNode is a Ready node with nothing else.
func NewFakeNode(name string) *FakeNode {
	return &FakeNode{
		name:        name,
		labels:      map[string]string{},
		annotations: map[string]string{},
		allocatable: map[string]int64{},
		conditions:  ConditionReady,
		taints:      []Taint{},
		podCIDRs:    []string{},
	}
}

// Label sets a label.
func (n *FakeNode) Label(key, value string) *FakeNode { n.labels[key] = value; return n }

// Annotation sets an annotation.
func (n *FakeNode) Annotation(key, value string) *FakeNode { n.annotations[key] = value; return n }

// Taint adds a taint; effect is NoSchedule, PreferNoSchedule or NoExecute.
func (n *FakeNode) Taint(key, value, effect string) *FakeNode {
	n.taints = append(n.taints, Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Allocatable sets an allocatable quantity (cpu in millicores; pods = the pod capacity).
func (n *FakeNode) Allocatable(resource string, quantity int64) *FakeNode {
	n.allocatable[resource] = quantity
	return n
}

// Conditions replaces the condition bits (default ConditionReady).
func (n *FakeNode) Conditions(c Conditions) *FakeNode { n.conditions = c; return n }

// Unschedulable sets spec.unschedulable.
func (n *FakeNode) Unschedulable() *FakeNode { n.conditions |= ConditionUnschedulable; return n }

// Image adds an image the node holds, by the name the kubelet reports, with its size.
func (n *FakeNode) Image(name string, sizeBytes int64) *FakeNode {
	n.images = append(n.images, fakeImage{name, sizeBytes})
	return n
}

// PodCIDR adds a pod CIDR.
func (n *FakeNode) PodCIDR(cidr string) *FakeNode { n.podCIDRs = append(n.podCIDRs, cidr); return n }

// Pod runs pod on the node: it counts in the node's pods and requested quantities.
func (n *FakeNode) Pod(pod *FakePod) *FakeNode {
	pod.nodeName = &n.name
	n.pods = append(n.pods, pod)
	return n
}

func (n *FakeNode) requested(resource string) int64 {
	if resource == "pods" {
		return int64(len(n.pods))
	}
	var sum int64
	for _, p := range n.pods {
		sum += p.requestOf(resource)
	}
	return sum
}

type fakeContainer struct {
	name     string
	image    string
	requests map[string]int64
}

// FakePod is a pod for TestHost: the pod being scheduled, or one running on a FakeNode.
type FakePod struct {
	name, namespace, uid      string
	labels, annotations       map[string]string
	nodeName                  *string
	schedulerName             string
	priority                  int32
	priorityClassName         string
	containers, initContainer []fakeContainer
	overhead                  map[string]int64
	nodeSelector              map[string]string
	tolerations               []Toleration
	hostNetwork               bool
}

// NewFakePod is a pod in namespace default with no containers.
func NewFakePod(name string) *FakePod {
	return &FakePod{
		name: name, namespace: "default", uid: "uid-" + name,
		labels: map[string]string{}, annotations: map[string]string{},
		schedulerName: "default-scheduler", overhead: map[string]int64{},
		nodeSelector: map[string]string{}, tolerations: []Toleration{},
	}
}

// Namespace sets the namespace.
func (p *FakePod) Namespace(ns string) *FakePod { p.namespace = ns; return p }

// UID sets the UID (default uid-<name>).
func (p *FakePod) UID(uid string) *FakePod { p.uid = uid; return p }

// Label sets a label.
func (p *FakePod) Label(key, value string) *FakePod { p.labels[key] = value; return p }

// Annotation sets an annotation.
func (p *FakePod) Annotation(key, value string) *FakePod { p.annotations[key] = value; return p }

// Request adds quantity of resource to the first app container's requests (creating a
// container "main" if there is none).
func (p *FakePod) Request(resource string, quantity int64) *FakePod {
	if len(p.containers) == 0 {
		p.Container("main", "", nil)
	}
	p.containers[0].requests[resource] += quantity
	return p
}

// Container adds an app container with its requests.
func (p *FakePod) Container(name, image string, requests map[string]int64) *FakePod {
	p.containers = append(p.containers, fakeContainer{name, image, copyMap(requests)})
	return p
}

// InitContainer adds an init container with its requests.
func (p *FakePod) InitContainer(name, image string, requests map[string]int64) *FakePod {
	p.initContainer = append(p.initContainer, fakeContainer{name, image, copyMap(requests)})
	return p
}

// Overhead sets a spec.overhead quantity.
func (p *FakePod) Overhead(resource string, quantity int64) *FakePod {
	p.overhead[resource] = quantity
	return p
}

// NodeSelector sets a spec.nodeSelector entry.
func (p *FakePod) NodeSelector(key, value string) *FakePod { p.nodeSelector[key] = value; return p }

// Toleration adds a toleration.
func (p *FakePod) Toleration(t Toleration) *FakePod {
	p.tolerations = append(p.tolerations, t)
	return p
}

// Priority sets the priority and its class name.
func (p *FakePod) Priority(priority int32, className string) *FakePod {
	p.priority, p.priorityClassName = priority, className
	return p
}

// SchedulerName sets spec.schedulerName (default default-scheduler).
func (p *FakePod) SchedulerName(name string) *FakePod { p.schedulerName = name; return p }

// HostNetwork sets spec.hostNetwork.
func (p *FakePod) HostNetwork() *FakePod { p.hostNetwork = true; return p }

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	maps.Copy(out, m)
	return out
}

// requestOf is the filter request as the host computes it: the larger of the app
// containers' sum and each init container, plus the overhead.
func (p *FakePod) requestOf(resource string) int64 {
	var sum, init int64
	for _, c := range p.containers {
		sum += c.requests[resource]
	}
	for _, c := range p.initContainer {
		init = max(init, c.requests[resource])
	}
	return max(sum, init) + p.overhead[resource]
}

func (p *FakePod) resourceNames() []string {
	names := map[string]bool{}
	for _, c := range append(slices.Clone(p.containers), p.initContainer...) {
		for n := range c.requests {
			names[n] = true
		}
	}
	for n := range p.overhead {
		names[n] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// LogLine is a line the plugin logged.
type LogLine struct {
	Level Level
	Text  string
}

// CallError is why a call did not complete.
type CallError struct {
	// Trap: a host function refused its arguments, or the plugin panicked; else the plugin
	// returned an error (from its constructor, Filter or Score).
	Trap    bool
	Message string
}

func (e *CallError) Error() string {
	if e.Trap {
		return "plugin trapped: " + e.Message
	}
	return "plugin failed: " + e.Message
}

// Verdict is a filter's answer for one node.
type Verdict struct {
	Node   string
	Reason string // "" when the node passes
}

// FilterResult is a filter's answer for every node of the host, in the host's node order.
type FilterResult struct {
	Verdicts []Verdict
	Logs     []LogLine // logged since the previous call (including the constructor's)
}

// Passed are the nodes that pass.
func (r FilterResult) Passed() []string {
	out := []string{}
	for _, v := range r.Verdicts {
		if v.Reason == "" {
			out = append(out, v.Node)
		}
	}
	return out
}

// Reason is the reason node was rejected for; "" if it passes or does not exist.
func (r FilterResult) Reason(node string) string {
	for _, v := range r.Verdicts {
		if v.Node == node {
			return v.Reason
		}
	}
	return ""
}

// NodeScore is a score plugin's raw score for one node.
type NodeScore struct {
	Node  string
	Score int64
}

// ScoreResult is a score plugin's raw scores for every node of the host.
type ScoreResult struct {
	Scores    []NodeScore
	Normalize Normalize // what the plugin asked for
	Logs      []LogLine
}

// maxNodeScore is the highest score a node gets from one priority, before its weight.
const maxNodeScore = 100

// Normalized are the scores the host would give, 0..100, taking every node as feasible
// (the host normalises over the nodes that passed the filters).
func (r ScoreResult) Normalized() []NodeScore {
	out := slices.Clone(r.Scores)
	if r.Normalize == NormalizeNone {
		for i := range out {
			out[i].Score = min(max(out[i].Score, 0), maxNodeScore)
		}
		return out
	}
	var highest int64
	for i := range out {
		out[i].Score = min(max(out[i].Score, 0), (1<<63-1)/maxNodeScore)
		highest = max(highest, out[i].Score)
	}
	reverse := r.Normalize == NormalizeReduceReverse
	for i := range out {
		switch {
		case highest == 0 && reverse:
			out[i].Score = maxNodeScore
		case highest == 0:
		case reverse:
			out[i].Score = maxNodeScore - maxNodeScore*out[i].Score/highest
		default:
			out[i].Score = maxNodeScore * out[i].Score / highest
		}
	}
	return out
}

// TestHost is the cluster and config a plugin runs against: the one this module registered
// with RegisterFilter or RegisterScore.
type TestHost struct {
	config    string
	nodes     []*FakeNode
	chunkSize int
}

// NewTestHost holds nodes, with config {} and every node in one call.
func NewTestHost(nodes ...*FakeNode) *TestHost {
	return &TestHost{config: "{}", nodes: nodes, chunkSize: 1 << 30}
}

// WithConfig sets the policy entry's config JSON, as the plugin receives it.
func (h *TestHost) WithConfig(json string) *TestHost { h.config = json; return h }

// WithChunkSize calls the plugin once per size nodes, as the host does on large clusters.
func (h *TestHost) WithChunkSize(size int) *TestHost { h.chunkSize = max(size, 1); return h }

// Instance is a started plugin: like the host's, it keeps its state (and reasons) from pod
// to pod.
type Instance struct {
	state  *hostState
	filter Filter
	score  Score
}

// Start starts an instance of the registered plugin, as berth_init does.
func (h *TestHost) Start() (*Instance, error) {
	inst := &Instance{state: newHostState(h)}
	err := inst.run(func() int32 {
		filter, score = nil, nil
		code := initPlugin()
		inst.filter, inst.score = filter, score
		return code
	})
	if err != nil {
		return nil, err
	}
	return inst, nil
}

// Filter runs the registered filter on pod in a fresh instance.
func (h *TestHost) Filter(pod *FakePod) (FilterResult, error) {
	inst, err := h.Start()
	if err != nil {
		return FilterResult{}, err
	}
	return inst.Filter(pod)
}

// Score runs the registered score plugin on pod in a fresh instance.
func (h *TestHost) Score(pod *FakePod) (ScoreResult, error) {
	inst, err := h.Start()
	if err != nil {
		return ScoreResult{}, err
	}
	return inst.Score(pod)
}

// Filter filters every node of the host for pod.
func (inst *Instance) Filter(pod *FakePod) (FilterResult, error) {
	s := inst.state
	if err := inst.eachChunk(pod, runFilter); err != nil {
		return FilterResult{}, err
	}
	out := FilterResult{Logs: s.takeLogs()}
	for i, n := range s.nodes {
		v := Verdict{Node: n.name}
		if id := s.verdicts[i]; id != 0 {
			v.Reason = s.reasons[id-1]
		}
		out.Verdicts = append(out.Verdicts, v)
	}
	return out, nil
}

// Score scores every node of the host for pod.
func (inst *Instance) Score(pod *FakePod) (ScoreResult, error) {
	s := inst.state
	if err := inst.eachChunk(pod, runScore); err != nil {
		return ScoreResult{}, err
	}
	out := ScoreResult{Normalize: s.normalize, Logs: s.takeLogs()}
	for i, n := range s.nodes {
		out.Scores = append(out.Scores, NodeScore{n.name, s.scores[i]})
	}
	return out, nil
}

func (inst *Instance) eachChunk(pod *FakePod, call func(count int32) int32) error {
	s := inst.state
	s.beginPod(pod)
	defer s.endPod()
	for start := 0; start < len(s.nodes); start += s.chunkSize {
		end := min(len(s.nodes), start+s.chunkSize)
		s.beginCall(start, end)
		err := inst.run(func() int32 {
			filter, score = inst.filter, inst.score
			return call(int32(end - start))
		})
		s.endCall()
		if err != nil {
			return err
		}
	}
	return nil
}

// current is the state the host functions serve; guarded by running, since the SDK's
// plugin and buffers are package variables.
var (
	running sync.Mutex
	current *hostState
)

type trap struct{ message string }

func hostTrap(format string, args ...any) { panic(trap{fmt.Sprintf(format, args...)}) }

// run makes the instance's state current for call; a non-zero return is the last
// set_error, a panic a trap.
func (inst *Instance) run(call func() int32) (err error) {
	running.Lock()
	current = inst.state
	defer func() {
		current = nil
		running.Unlock()
		if p := recover(); p != nil {
			if t, ok := p.(trap); ok {
				err = &CallError{Trap: true, Message: t.message}
			} else {
				err = &CallError{Trap: true, Message: fmt.Sprintf("the plugin panicked: %v", p)}
			}
		}
	}()
	if code := call(); code != 0 {
		msg := inst.state.err
		if msg == "" {
			msg = fmt.Sprintf("returned %d", code)
		}
		return &CallError{Message: msg}
	}
	return nil
}

// hostState is what the host functions read and write for one instance.
type hostState struct {
	config     string
	nodes      []*FakeNode
	chunkSize  int
	symbols    []string
	symbolIDs  map[string]int32
	inCall     bool
	callStart  int
	callEnd    int
	pod        *FakePod
	podJSON    []byte
	reasons    []string
	reasonIDs  map[string]uint32
	verdicts   []uint32 // per node of the host
	scores     []int64
	callVerd   []uint32 // per node of the call
	callScores []int64
	err        string
	normalize  Normalize
	logs       []LogLine
}

func newHostState(h *TestHost) *hostState {
	s := &hostState{
		config: h.config, nodes: h.nodes, chunkSize: h.chunkSize,
		symbolIDs: map[string]int32{}, reasonIDs: map[string]uint32{},
	}
	// The host interns what the cluster's objects use: labels, namespaces, images.
	for _, n := range h.nodes {
		for _, k := range slices.Sorted(maps.Keys(n.labels)) {
			s.intern(k)
			s.intern(n.labels[k])
		}
		for _, img := range n.images {
			s.intern(img.name)
		}
		for _, p := range n.pods {
			s.internPod(p)
		}
	}
	return s
}

func (s *hostState) intern(text string) {
	if _, ok := s.symbolIDs[text]; !ok {
		s.symbols = append(s.symbols, text)
		s.symbolIDs[text] = int32(len(s.symbols))
	}
}

func (s *hostState) internPod(p *FakePod) {
	s.intern(p.namespace)
	for _, k := range slices.Sorted(maps.Keys(p.labels)) {
		s.intern(k)
		s.intern(p.labels[k])
	}
}

func (s *hostState) beginPod(p *FakePod) {
	s.internPod(p)
	s.pod, s.podJSON = p, nil
	s.verdicts = make([]uint32, len(s.nodes))
	s.scores = make([]int64, len(s.nodes))
}

func (s *hostState) endPod() { s.pod, s.podJSON, s.inCall = nil, nil, false }

func (s *hostState) beginCall(start, end int) {
	s.inCall, s.callStart, s.callEnd, s.err = true, start, end, ""
	s.callVerd = make([]uint32, end-start)
	s.callScores = make([]int64, end-start)
}

func (s *hostState) endCall() {
	copy(s.verdicts[s.callStart:s.callEnd], s.callVerd)
	copy(s.scores[s.callStart:s.callEnd], s.callScores)
	s.inCall = false
}

func (s *hostState) takeLogs() []LogLine {
	logs := s.logs
	s.logs = nil
	return logs
}

// The host functions.

func state() *hostState {
	if current == nil {
		panic("berth plugin: outside wasm, host functions are served only while a TestHost runs a plugin")
	}
	return current
}

// call is state() for node and pod accessors, which the host serves only during a call.
func call() *hostState {
	s := state()
	if !s.inCall {
		hostTrap("node and pod accessors are only available during berth_filter / berth_score")
	}
	return s
}

func (s *hostState) node(i int32) *FakeNode {
	if i < 0 || int(i) >= s.callEnd-s.callStart {
		hostTrap("node index %d is outside this call's %d nodes", i, s.callEnd-s.callStart)
	}
	return s.nodes[s.callStart+int(i)]
}

func (s *hostState) callNodes() []*FakeNode { return s.nodes[s.callStart:s.callEnd] }

func (s *hostState) symbolText(sym int32) (string, bool) {
	if sym <= 0 || int(sym) > len(s.symbols) {
		return "", false
	}
	return s.symbols[sym-1], true
}

func readString(p unsafe.Pointer, n int32) string {
	if n <= 0 || p == nil {
		return ""
	}
	b := unsafe.Slice((*byte)(p), n)
	if !utf8.Valid(b) {
		hostTrap("a string argument is not valid UTF-8")
	}
	return string(b)
}

// writeResult is the string-result convention.
func writeResult(out unsafe.Pointer, capacity int32, value []byte, present bool) int32 {
	if !present {
		return -1
	}
	if len(value) <= int(capacity) && len(value) > 0 {
		copy(unsafe.Slice((*byte)(out), capacity), value)
	}
	return int32(len(value))
}

func writeString(out unsafe.Pointer, capacity int32, value string, present bool) int32 {
	return writeResult(out, capacity, []byte(value), present)
}

func stringColumn(values []string, present []bool) []byte {
	out := make([]byte, 8*len(values))
	offset := uint32(len(out))
	for i, v := range values {
		if !present[i] {
			binary.LittleEndian.PutUint32(out[i*8+4:], ^uint32(0))
			continue
		}
		binary.LittleEndian.PutUint32(out[i*8:], offset)
		binary.LittleEndian.PutUint32(out[i*8+4:], uint32(len(v)))
		offset += uint32(len(v))
	}
	for i, v := range values {
		if present[i] {
			out = append(out, v...)
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (s *hostState) resource(n *FakeNode, name string, requested bool) int64 {
	if requested {
		return n.requested(name)
	}
	return n.allocatable[name]
}

func hostConfig(out unsafe.Pointer, capacity int32) int32 {
	return writeString(out, capacity, state().config, true)
}

func hostLog(level int32, ptr unsafe.Pointer, length int32) {
	text := ""
	if length > 0 {
		text = string(unsafe.Slice((*byte)(ptr), length))
	}
	s := state()
	s.logs = append(s.logs, LogLine{Level(min(max(level, 0), 3)), text})
}

func hostSetError(ptr unsafe.Pointer, length int32) {
	text := ""
	if length > 0 {
		text = string(unsafe.Slice((*byte)(ptr), min(length, 1024)))
	}
	state().err = text
}

func hostSetNormalize(mode int32) {
	if mode < 0 || mode > 2 {
		hostTrap("set_normalize(%d): expected 0 (none), 1 (reduce) or 2 (reverse)", mode)
	}
	state().normalize = Normalize(mode)
}

func hostIntern(ptr unsafe.Pointer, length int32) int32 {
	text := readString(ptr, length)
	return call().symbolIDs[text]
}

func hostSymbol(sym int32, out unsafe.Pointer, capacity int32) int32 {
	text, ok := call().symbolText(sym)
	return writeString(out, capacity, text, ok)
}

func hostPodJSON(out unsafe.Pointer, capacity int32) int32 {
	s := call()
	if s.podJSON == nil {
		s.podJSON = podView(s.pod)
	}
	return writeResult(out, capacity, s.podJSON, true)
}

func hostPodAnnotation(kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32 {
	key := readString(kp, kl)
	v, ok := call().pod.annotations[key]
	return writeString(out, capacity, v, ok)
}

func hostPodLabel(kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32 {
	key := readString(kp, kl)
	v, ok := call().pod.labels[key]
	return writeString(out, capacity, v, ok)
}

func hostPodRequest(np unsafe.Pointer, nl int32) int64 {
	return call().pod.requestOf(readString(np, nl))
}

func hostNodeName(i int32, out unsafe.Pointer, capacity int32) int32 {
	return writeString(out, capacity, call().node(i).name, true)
}

func hostNodeLabel(i int32, key int32) int32 {
	s := call()
	n := s.node(i)
	k, ok := s.symbolText(key)
	if !ok {
		return 0
	}
	v, ok := n.labels[k]
	if !ok {
		return 0
	}
	return s.symbolIDs[v]
}

func hostNodeAnnotation(i int32, kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32 {
	key := readString(kp, kl)
	v, ok := call().node(i).annotations[key]
	return writeString(out, capacity, v, ok)
}

func hostNodeTaints(i int32, out unsafe.Pointer, capacity int32) int32 {
	return writeResult(out, capacity, mustJSON(call().node(i).taints), true)
}

func hostNodeAllocatable(i int32, np unsafe.Pointer, nl int32) int64 {
	name := readString(np, nl)
	s := call()
	return s.resource(s.node(i), name, false)
}

func hostNodeRequested(i int32, np unsafe.Pointer, nl int32) int64 {
	name := readString(np, nl)
	s := call()
	return s.resource(s.node(i), name, true)
}

func hostNodePodCount(i int32) int32 { return int32(len(call().node(i).pods)) }

func hostNodeConditions(i int32) int32 { return int32(call().node(i).conditions) }

func hostNodeImageSize(i int32, np unsafe.Pointer, nl int32) int64 {
	name := readString(np, nl)
	images := call().node(i).images
	for k := len(images) - 1; k >= 0; k-- {
		if images[k].name == name {
			return images[k].size
		}
	}
	return -1
}

func hostNodePods(i int32, out unsafe.Pointer, capacity int32) int32 {
	pods := []PodRef{}
	for _, p := range call().node(i).pods {
		pods = append(pods, PodRef{p.namespace, p.name, p.labels})
	}
	return writeResult(out, capacity, mustJSON(pods), true)
}

func hostNodeJSON(i int32, out unsafe.Pointer, capacity int32) int32 {
	return writeResult(out, capacity, nodeView(call().node(i)), true)
}

func hostNodesLabel(key int32, out unsafe.Pointer) {
	s := call()
	nodes := s.callNodes()
	column := unsafe.Slice((*uint32)(out), len(nodes))
	k, ok := s.symbolText(key)
	for j, n := range nodes {
		column[j] = 0
		if v, has := n.labels[k]; ok && has {
			column[j] = uint32(s.symbolIDs[v])
		}
	}
}

func hostNodesAnnotation(kp unsafe.Pointer, kl int32, out unsafe.Pointer, capacity int32) int32 {
	key := readString(kp, kl)
	nodes := call().callNodes()
	values, present := make([]string, len(nodes)), make([]bool, len(nodes))
	for j, n := range nodes {
		values[j], present[j] = n.annotations[key]
	}
	return writeResult(out, capacity, stringColumn(values, present), true)
}

func hostNodesName(out unsafe.Pointer, capacity int32) int32 {
	nodes := call().callNodes()
	values, present := make([]string, len(nodes)), make([]bool, len(nodes))
	for j, n := range nodes {
		values[j], present[j] = n.name, true
	}
	return writeResult(out, capacity, stringColumn(values, present), true)
}

func hostNodesResource(which int32, np unsafe.Pointer, nl int32, out unsafe.Pointer) {
	name := readString(np, nl)
	if which != 0 && which != 1 {
		hostTrap("nodes_resource(%d): expected 0 (allocatable) or 1 (requested)", which)
	}
	s := call()
	nodes := s.callNodes()
	column := unsafe.Slice((*int64)(out), len(nodes))
	for j, n := range nodes {
		column[j] = s.resource(n, name, which == 1)
	}
}

const (
	maxReasons     = 4096
	maxReasonBytes = 256
)

func hostReason(ptr unsafe.Pointer, length int32) int32 {
	text := ""
	if length > 0 {
		text = string(unsafe.Slice((*byte)(ptr), length))
	}
	if len(text) > maxReasonBytes {
		end := maxReasonBytes
		for end > 0 && !utf8.RuneStart(text[end]) {
			end--
		}
		text = text[:end]
	}
	s := state()
	if id, ok := s.reasonIDs[text]; ok {
		return int32(id)
	}
	if len(s.reasons) >= maxReasons {
		hostTrap("more than %d distinct reasons; reasons should be a few constant texts", maxReasons)
	}
	s.reasons = append(s.reasons, text)
	s.reasonIDs[text] = uint32(len(s.reasons))
	return int32(len(s.reasons))
}

func hostSetVerdicts(ptr unsafe.Pointer) {
	s := state()
	ids := unsafe.Slice((*uint32)(ptr), len(s.callVerd))
	for _, id := range ids {
		if int(id) > len(s.reasons) {
			hostTrap("set_verdicts: unknown reason id %d; register it with `reason` first", id)
		}
	}
	copy(s.callVerd, ids)
}

func hostSetScores(ptr unsafe.Pointer) {
	s := state()
	copy(s.callScores, unsafe.Slice((*int64)(ptr), len(s.callScores)))
}

// The JSON views of docs/plugin-abi.md, with the wasm host's shapes and defaults.

type containerView struct {
	Name      string `json:"name"`
	Image     string `json:"image"`
	Resources struct {
		Requests map[string]int64 `json:"requests"`
	} `json:"resources"`
}

func containerViews(list []fakeContainer) []containerView {
	out := []containerView{}
	for _, c := range list {
		v := containerView{Name: c.name, Image: c.image}
		v.Resources.Requests = c.requests
		out = append(out, v)
	}
	return out
}

func metaView(name, namespace, uid string, labels, annotations map[string]string) map[string]any {
	return map[string]any{"name": name, "namespace": namespace, "uid": uid, "labels": labels, "annotations": annotations}
}

var baseResources = []string{"cpu", "memory", "ephemeral-storage"}

func podView(p *FakePod) []byte {
	scalars := map[string]int64{}
	for _, n := range p.resourceNames() {
		if !slices.Contains(baseResources, n) {
			scalars[n] = p.requestOf(n)
		}
	}
	return mustJSON(map[string]any{
		"metadata": metaView(p.name, p.namespace, p.uid, p.labels, p.annotations),
		"spec": map[string]any{
			"nodeName": p.nodeName, "schedulerName": p.schedulerName,
			"priority": p.priority, "priorityClassName": p.priorityClassName,
			"containers": containerViews(p.containers), "initContainers": containerViews(p.initContainer),
			"overhead": p.overhead, "nodeSelector": p.nodeSelector,
			"tolerations": p.tolerations, "hostNetwork": p.hostNetwork,
		},
		"request": map[string]any{
			"cpu": p.requestOf("cpu"), "memory": p.requestOf("memory"),
			"ephemeral-storage": p.requestOf("ephemeral-storage"), "scalars": scalars,
		},
	})
}

// resourcesView: cpu, memory, ephemeral-storage (0 when unset), pods, then the others.
func resourcesView(names []string, of func(string) int64) map[string]int64 {
	out := map[string]int64{}
	for _, n := range append(append(slices.Clone(baseResources), "pods"), names...) {
		out[n] = of(n)
	}
	return out
}

func nodeView(n *FakeNode) []byte {
	images := []map[string]any{}
	for _, img := range n.images {
		images = append(images, map[string]any{"names": []string{img.name}, "sizeBytes": img.size})
	}
	var requested []string
	for _, p := range n.pods {
		requested = append(requested, p.resourceNames()...)
	}
	allocatable := slices.Collect(maps.Keys(n.allocatable))
	sort.Strings(allocatable)
	c := n.conditions
	return mustJSON(map[string]any{
		"metadata": metaView(n.name, "", "", n.labels, n.annotations),
		"spec": map[string]any{
			"unschedulable": c.Has(ConditionUnschedulable), "taints": n.taints, "podCIDRs": n.podCIDRs,
		},
		"status": map[string]any{
			"allocatable": resourcesView(allocatable, func(r string) int64 { return n.allocatable[r] }),
			"conditions": map[string]bool{
				"ready": c.Has(ConditionReady), "memoryPressure": c.Has(ConditionMemoryPressure),
				"diskPressure": c.Has(ConditionDiskPressure), "pidPressure": c.Has(ConditionPIDPressure),
				"networkUnavailable": c.Has(ConditionNetworkUnavailable),
			},
			"images": images,
		},
		"requested": resourcesView(requested, n.requested),
		"podCount":  len(n.pods),
	})
}
