//go:build !wasip1

package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// probe is a filter whose behaviour is picked by its config, to reach every path of the host.
type probe struct {
	mode    string
	fits    Reason
	tainted Reason
}

type probeConfig struct {
	Mode string `json:"mode"`
}

func registerProbe() {
	RegisterFilter(probeConfig{}, func(c probeConfig) (Filter, error) {
		Log(LevelInfo, "mode "+c.Mode)
		switch c.Mode {
		case "symbol-in-new":
			SymbolOf("zone")
		case "fail-new":
			return nil, errors.New("config.mode: fail-new asked to fail")
		}
		return &probe{mode: c.Mode, fits: NewReason("fits not"), tainted: NewReason("untolerated taint")}, nil
	})
}

func (p *probe) Filter(pod *Pod, nodes *Nodes, v *Verdicts) error {
	switch p.mode {
	case "bad-index":
		nodes.Name(nodes.Len())
	case "panic":
		panic("boom")
	case "error":
		return errors.New("no luck")
	case "log":
		Log(LevelWarn, fmt.Sprintf("%d nodes", nodes.Len()))
	default:
		tolerations := pod.Tolerations()
		for i := range nodes.Len() {
			untolerated := false
			for _, t := range nodes.Taints(i) {
				ok := false
				for _, tol := range tolerations {
					ok = ok || tol.Tolerates(t)
				}
				untolerated = untolerated || !ok
			}
			switch {
			case untolerated:
				v.Reject(i, p.tainted)
			case nodes.Allocatable(i, "cpu")-nodes.Requested(i, "cpu") < pod.Request("cpu"):
				v.Reject(i, p.fits)
			}
		}
	}
	return nil
}

func probeHost(mode string) *TestHost {
	return NewTestHost(
		NewFakeNode("small").Allocatable("cpu", 1000),
		NewFakeNode("busy").Allocatable("cpu", 4000).Pod(NewFakePod("a").Request("cpu", 3500)),
		NewFakeNode("tainted").Allocatable("cpu", 4000).Taint("gpu", "true", "NoSchedule"),
		NewFakeNode("free").Allocatable("cpu", 4000),
	).WithConfig(fmt.Sprintf(`{"mode": %q}`, mode))
}

func effect(e string) *string { return &e }

func TestRequestsTaintsAndTolerations(t *testing.T) {
	registerProbe()
	cases := []struct {
		name string
		pod  *FakePod
		want []string
	}{
		{"small pod", NewFakePod("p").Request("cpu", 500), []string{"small", "busy", "free"}},
		{"large pod", NewFakePod("p").Request("cpu", 2000), []string{"free"}},
		{"init container larger than the app containers", NewFakePod("p").
			Container("a", "", map[string]int64{"cpu": 100}).
			InitContainer("init", "", map[string]int64{"cpu": 1500}), []string{"free"}},
		{"overhead counts", NewFakePod("p").Request("cpu", 400).Overhead("cpu", 200), []string{"small", "free"}},
		{"tolerates the taint", NewFakePod("p").Toleration(Toleration{Key: "gpu", Operator: "Equal", Value: "true", Effect: effect("NoSchedule")}),
			[]string{"small", "busy", "tainted", "free"}},
		{"wrong effect", NewFakePod("p").Toleration(Toleration{Key: "gpu", Operator: "Exists", Effect: effect("NoExecute")}),
			[]string{"small", "busy", "free"}},
		{"tolerates everything", NewFakePod("p").Toleration(Toleration{Operator: "Exists"}),
			[]string{"small", "busy", "tainted", "free"}},
	}
	for _, c := range cases {
		got, err := probeHost("fit").Filter(c.pod)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got.Passed(), c.want) {
			t.Errorf("%s: passed %v, want %v", c.name, got.Passed(), c.want)
		}
	}
	got, err := probeHost("fit").Filter(NewFakePod("p").Request("cpu", 2000))
	if err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]string{"tainted": "untolerated taint", "small": "fits not", "free": ""} {
		if got.Reason(node) != want {
			t.Errorf("%s: reason %q, want %q", node, got.Reason(node), want)
		}
	}
}

func TestFailuresAndTraps(t *testing.T) {
	registerProbe()
	cases := []struct {
		mode string
		want CallError
	}{
		{"bad-index", CallError{Trap: true, Message: "node index 4 is outside this call's 4 nodes"}},
		{"panic", CallError{Trap: true, Message: "the plugin panicked: boom"}},
		{"error", CallError{Message: "no luck"}},
		{"fail-new", CallError{Message: "config.mode: fail-new asked to fail"}},
		{"symbol-in-new", CallError{Trap: true, Message: "node and pod accessors are only available during berth_filter / berth_score"}},
	}
	for _, c := range cases {
		_, err := probeHost(c.mode).Filter(NewFakePod("p"))
		var got *CallError
		if !errors.As(err, &got) || *got != c.want {
			t.Errorf("%s: got %v, want %v", c.mode, err, &c.want)
		}
	}
}

func TestLogsArePerCall(t *testing.T) {
	registerProbe()
	inst, err := probeHost("log").WithChunkSize(3).Start()
	if err != nil {
		t.Fatal(err)
	}
	first, err := inst.Filter(NewFakePod("p"))
	if err != nil {
		t.Fatal(err)
	}
	want := []LogLine{{LevelInfo, "mode log"}, {LevelWarn, "3 nodes"}, {LevelWarn, "1 nodes"}}
	if !reflect.DeepEqual(first.Logs, want) {
		t.Errorf("first call logs %v, want %v", first.Logs, want)
	}
	second, err := inst.Filter(NewFakePod("q"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(second.Logs, want[1:]) {
		t.Errorf("second call logs %v, want %v", second.Logs, want[1:])
	}
}

// views scores each node from every view and column, after checking that they agree.
type views struct{}

func (views) Score(pod *Pod, nodes *Nodes, scores []int64) error {
	var podView struct {
		Request struct {
			CPU     int64            `json:"cpu"`
			Scalars map[string]int64 `json:"scalars"`
		} `json:"request"`
	}
	if err := pod.JSON(&podView); err != nil {
		return err
	}
	requested := nodes.ResourceColumn(Requested, "example.com/gpu", nil)
	names := nodes.NameColumn()
	notes, present := nodes.AnnotationColumn("note")
	for i := range nodes.Len() {
		var node struct {
			Requested map[string]int64 `json:"requested"`
			Spec      struct {
				Unschedulable bool `json:"unschedulable"`
			} `json:"spec"`
			Status struct {
				Allocatable map[string]int64 `json:"allocatable"`
			} `json:"status"`
		}
		if err := nodes.JSON(i, &node); err != nil {
			return err
		}
		note, has := nodes.Annotation(i, "note")
		checks := []bool{
			names[i] == nodes.Name(i),
			note == notes[i] && has == present[i],
			podView.Request.CPU == pod.Request("cpu"),
			podView.Request.Scalars["example.com/gpu"] == pod.Request("example.com/gpu"),
			node.Requested["example.com/gpu"] == requested[i],
			node.Requested["pods"] == int64(nodes.PodCount(i)),
			node.Status.Allocatable["memory"] == nodes.Allocatable(i, "memory"),
			node.Spec.Unschedulable == nodes.Conditions(i).Has(ConditionUnschedulable),
			len(nodes.Pods(i)) == nodes.PodCount(i),
		}
		for k, ok := range checks {
			if !ok {
				return fmt.Errorf("%s: check %d failed", names[i], k)
			}
		}
		size, ok := nodes.ImageSize(i, "img:1")
		if !ok {
			size = -1
		}
		scores[i] = requested[i]*1000 + size + int64(nodes.Conditions(i))*100
	}
	return nil
}

func TestViewsAndColumnsAgree(t *testing.T) {
	RegisterScore(struct{}{}, func(struct{}) (Score, error) { return views{}, nil }, NormalizeReduce)
	host := NewTestHost(
		NewFakeNode("a").Annotation("note", "x").Image("img:1", 7).
			Pod(NewFakePod("g1").Request("example.com/gpu", 2)).
			Pod(NewFakePod("g2").Container("c", "img:1", map[string]int64{"example.com/gpu": 1})),
		NewFakeNode("b").Allocatable("memory", 1<<30).
			Conditions(ConditionReady|ConditionDiskPressure).Unschedulable(),
		NewFakeNode("c").Conditions(0),
	).WithChunkSize(2)
	got, err := host.Score(NewFakePod("p").Request("cpu", 100).Request("example.com/gpu", 1))
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeScore{{"a", 3000 + 7 + 100}, {"b", -1 + 3700}, {"c", -1}}
	if !reflect.DeepEqual(got.Scores, want) || got.Normalize != NormalizeReduce {
		t.Errorf("scores %v (%v), want %v", got.Scores, got.Normalize, want)
	}
	normalized := []NodeScore{{"a", 83}, {"b", 100}, {"c", 0}}
	if !reflect.DeepEqual(got.Normalized(), normalized) {
		t.Errorf("normalized %v, want %v", got.Normalized(), normalized)
	}
}

func TestSymbolsExistOnlyForStringsTheClusterUses(t *testing.T) {
	RegisterFilter(struct{}{}, func(struct{}) (Filter, error) { return symbols{}, nil })
	host := NewTestHost(
		NewFakeNode("n").Label("zone", "z1").Image("img:1", 1).
			Pod(NewFakePod("w").Namespace("kube-system").Label("app", "web")),
		NewFakeNode("m"),
	)
	got, err := host.Filter(NewFakePod("p"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Passed(), []string{"n", "m"}) {
		t.Errorf("verdicts %v", got.Verdicts)
	}
}

type symbols struct{}

func (symbols) Filter(_ *Pod, nodes *Nodes, v *Verdicts) error {
	ok := true
	for _, text := range []string{"zone", "z1", "app", "web", "img:1", "kube-system"} {
		ok = ok && SymbolOf(text) != 0 && SymbolOf(text).Text() == text
	}
	for _, text := range []string{"nowhere", "z2"} {
		ok = ok && SymbolOf(text) == 0
	}
	zone := SymbolOf("zone")
	column := nodes.LabelColumn(zone, nil)
	for i := range nodes.Len() {
		ok = ok && nodes.Label(i, zone) == column[i]
	}
	if text, has := nodes.LabelText(0, "zone"); !has || text != "z1" {
		ok = false
	}
	if !ok {
		v.Reject(0, NewReason("symbols disagree"))
	}
	return nil
}

func TestParseConfigNamesTheField(t *testing.T) {
	type inner struct {
		Deep int `json:"deep"`
	}
	type config struct {
		Lead  float64 `json:"lead"`
		Name  string  `json:"name"`
		Inner inner   `json:"inner"`
	}
	defaults := config{Lead: 30, Name: "x"}
	cases := []struct {
		text string
		want config
		err  string
	}{
		{`{}`, defaults, ""},
		{`{"lead": 5}`, config{Lead: 5, Name: "x"}, ""},
		{`{"lead": "5"}`, defaults, "config.lead: expected float64, got string"},
		{`{"inner": {"deep": true}}`, defaults, "config.inner.deep: expected int, got bool"},
		{`{"leed": 5}`, defaults, "config.leed: unknown field"},
		{`{"lead": 5`, defaults, "config: unexpected EOF"},
		{`5`, defaults, "config: expected plugin.config, got number"},
		{`{} {}`, defaults, "config: unexpected data after the JSON value"},
	}
	for _, c := range cases {
		got, err := ParseConfig(c.text, defaults)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != c.err || got != c.want {
			t.Errorf("%s: got %+v, %q; want %+v, %q", c.text, got, msg, c.want, c.err)
		}
	}
	raw, err := ParseConfig(`{"any": [1]}`, json.RawMessage(nil))
	if err != nil || string(raw) != `{"any": [1]}` {
		t.Errorf("raw config: %s, %v", raw, err)
	}
}

func TestTolerationMatchesAsKubernetes(t *testing.T) {
	taint := Taint{Key: "k", Value: "v", Effect: "NoSchedule"}
	cases := []struct {
		t    Toleration
		want bool
	}{
		{Toleration{Key: "k", Operator: "Equal", Value: "v"}, true},
		{Toleration{Key: "k", Value: "v"}, true},
		{Toleration{Key: "k", Operator: "Equal", Value: "w"}, false},
		{Toleration{Key: "k", Operator: "Equal", Value: "v", Effect: effect("NoExecute")}, false},
		{Toleration{Key: "k", Operator: "Exists"}, true},
		{Toleration{Key: "j", Operator: "Exists"}, false},
		{Toleration{Operator: "Exists", Effect: effect("NoSchedule")}, true},
		{Toleration{Key: "k", Operator: "Bogus", Value: "v"}, false},
	}
	for _, c := range cases {
		if got := c.t.Tolerates(taint); got != c.want {
			t.Errorf("%+v: %v, want %v", c.t, got, c.want)
		}
	}
}
