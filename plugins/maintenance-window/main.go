// Maintenance-window filter: a node whose annotation announces a maintenance window that is
// in progress, or starts within the lead time, takes no new pods.
//
// The annotation (default berth.dev/maintenance-window) holds "START/END" in RFC 3339, e.g.
// "2026-11-22T02:00:00Z/2026-11-22T04:00:00Z". Config (all optional):
// {"annotation": "berth.dev/maintenance-window", "leadMinutes": 30, "now": "<RFC 3339>"};
// "now" pins the clock, for tests and what-if simulations.
package main

import (
	"fmt"
	"strings"
	"time"

	"berth.dev/plugin"
)

type window struct {
	annotation string
	lead       time.Duration
	now        time.Time
	reason     plugin.Reason
	warned     map[string]bool
}

type config struct {
	Annotation  string  `json:"annotation"`
	LeadMinutes float64 `json:"leadMinutes"`
	Now         string  `json:"now"`
}

// defaults are the config fields a policy entry leaves out.
var defaults = config{Annotation: "berth.dev/maintenance-window", LeadMinutes: 30}

// reason is the text nodes are rejected with.
const reason = "node(s) in or near a maintenance window"

func newWindow(c config) (plugin.Filter, error) {
	if c.Annotation == "" {
		return nil, fmt.Errorf("config.annotation: expected a non-empty annotation key")
	}
	if c.LeadMinutes < 0 {
		return nil, fmt.Errorf("config.leadMinutes: must be >= 0, got %v", c.LeadMinutes)
	}
	w := &window{
		annotation: c.Annotation,
		lead:       time.Duration(c.LeadMinutes * float64(time.Minute)),
		reason:     plugin.NewReason(reason),
		warned:     map[string]bool{},
	}
	if c.Now != "" {
		now, err := time.Parse(time.RFC3339, c.Now)
		if err != nil {
			return nil, fmt.Errorf("config.now: %w", err)
		}
		w.now = now
	}
	return w, nil
}

func (w *window) Filter(_ *plugin.Pod, nodes *plugin.Nodes, v *plugin.Verdicts) error {
	now := w.now
	if now.IsZero() {
		now = time.Now()
	}
	horizon := now.Add(w.lead)
	values, ok := nodes.AnnotationColumn(w.annotation)
	for i, value := range values {
		if !ok[i] {
			continue
		}
		start, end, err := parseWindow(value)
		if err != nil {
			// A malformed window must not take capacity away: the node passes, once logged.
			if !w.warned[value] {
				w.warned[value] = true
				plugin.Log(plugin.LevelWarn, fmt.Sprintf("node %s: ignoring %s=%q: %v", nodes.Name(i), w.annotation, value, err))
			}
			continue
		}
		if start.Before(horizon) && end.After(now) {
			v.Reject(i, w.reason)
		}
	}
	return nil
}

func parseWindow(value string) (time.Time, time.Time, error) {
	from, to, found := strings.Cut(value, "/")
	if !found {
		return time.Time{}, time.Time{}, fmt.Errorf("expected START/END")
	}
	start, err := time.Parse(time.RFC3339, strings.TrimSpace(from))
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	end, err := time.Parse(time.RFC3339, strings.TrimSpace(to))
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	return start, end, nil
}

func init() { plugin.RegisterFilter(defaults, newWindow) }

func main() {}
