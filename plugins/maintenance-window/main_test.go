//go:build !wasip1

package main

import (
	"errors"
	"reflect"
	"testing"

	"berth.dev/plugin"
)

const annotation = "berth.dev/maintenance-window"

// nodes: one per window, relative to 2026-11-22T03:00:00Z (the pinned "now").
func host(config string) *plugin.TestHost {
	return plugin.NewTestHost(
		plugin.NewFakeNode("in-window").Annotation(annotation, "2026-11-22T02:00:00Z/2026-11-22T04:00:00Z"),
		plugin.NewFakeNode("starts-in-10m").Annotation(annotation, "2026-11-22T03:10:00Z/2026-11-22T05:00:00Z"),
		plugin.NewFakeNode("starts-in-2h").Annotation(annotation, "2026-11-22T05:00:00Z/2026-11-22T06:00:00Z"),
		plugin.NewFakeNode("ended").Annotation(annotation, "2026-11-22T01:00:00Z/2026-11-22T02:59:59Z"),
		plugin.NewFakeNode("no-window"),
		plugin.NewFakeNode("malformed").Annotation(annotation, "tomorrow"),
		plugin.NewFakeNode("other-key").Annotation("maintenance", "2026-11-22T02:00:00Z/2026-11-22T04:00:00Z"),
	).WithConfig(config)
}

func TestWindows(t *testing.T) {
	cases := []struct {
		name   string
		config string
		passed []string
	}{
		{"default lead of 30 minutes", `{"now": "2026-11-22T03:00:00Z"}`,
			[]string{"starts-in-2h", "ended", "no-window", "malformed", "other-key"}},
		{"no lead", `{"now": "2026-11-22T03:00:00Z", "leadMinutes": 0}`,
			[]string{"starts-in-10m", "starts-in-2h", "ended", "no-window", "malformed", "other-key"}},
		{"three hours of lead", `{"now": "2026-11-22T03:00:00Z", "leadMinutes": 180}`,
			[]string{"ended", "no-window", "malformed", "other-key"}},
		{"another annotation", `{"now": "2026-11-22T03:00:00Z", "annotation": "maintenance"}`,
			[]string{"in-window", "starts-in-10m", "starts-in-2h", "ended", "no-window", "malformed"}},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 100} {
			got, err := host(c.config).WithChunkSize(chunk).Filter(plugin.NewFakePod("p"))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !reflect.DeepEqual(got.Passed(), c.passed) {
				t.Errorf("%s (chunk %d): passed %v, want %v", c.name, chunk, got.Passed(), c.passed)
			}
			for _, v := range got.Verdicts {
				if v.Reason != "" && v.Reason != reason {
					t.Errorf("%s: %s rejected for %q", c.name, v.Node, v.Reason)
				}
			}
		}
	}
}

func TestMalformedWindowIsLoggedOnce(t *testing.T) {
	inst, err := host(`{"now": "2026-11-22T03:00:00Z"}`).Start()
	if err != nil {
		t.Fatal(err)
	}
	want := []plugin.LogLine{{Level: plugin.LevelWarn,
		Text: `node malformed: ignoring berth.dev/maintenance-window="tomorrow": expected START/END`}}
	for pod, lines := range [][]plugin.LogLine{want, nil} {
		got, err := inst.Filter(plugin.NewFakePod("p"))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Logs, lines) {
			t.Errorf("pod %d: logs %v, want %v", pod, got.Logs, lines)
		}
	}
}

func TestBadConfigNamesTheField(t *testing.T) {
	cases := []struct{ config, want string }{
		{`{"leadMinutes": -1}`, "config.leadMinutes: must be >= 0, got -1"},
		{`{"leadMinutes": "30"}`, "config.leadMinutes: expected float64, got string"},
		{`{"now": "yesterday"}`, `config.now: parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{`{"annotation": ""}`, "config.annotation: expected a non-empty annotation key"},
		{`{"lead": 5}`, "config.lead: unknown field"},
	}
	for _, c := range cases {
		_, err := host(c.config).Start()
		var callErr *plugin.CallError
		if !errors.As(err, &callErr) || callErr.Trap || callErr.Message != c.want {
			t.Errorf("%s: got %v, want %q", c.config, err, c.want)
		}
	}
}
