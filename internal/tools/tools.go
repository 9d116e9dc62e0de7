// Package tools implements the tool kinds that run inside astra rather
// than as a process or a webhook: the builtin introspection tools (over
// the ledger) and the github tools (over the GitHub API). The executor
// calls them through the function fields of executor.Options.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Builtin implements the builtin tools (tier 0 introspection) over the
// ledger in store, at the time now returns.
func Builtin(cfg *model.Config, store *ledger.Store, now func() time.Time) func(context.Context, string, map[string]any) (string, error) {
	return func(_ context.Context, name string, p map[string]any) (string, error) {
		at := now()
		switch name {
		case model.BuiltinTasksList:
			since, err := Since(str(p, "since"), at)
			if err != nil {
				return "", err
			}
			limit, err := integer(p, "limit", 20)
			if err != nil {
				return "", err
			}
			if since.IsZero() {
				since = time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC) // Tasks' default
			}
			ts, err := introspect.Tasks(store, at, introspect.Query{Schedule: str(p, "schedule"), Actor: str(p, "actor"), Tenant: str(p, "tenant"),
				Status: str(p, "status"), Since: since, Limit: limit})
			return noted(introspect.Text(ts), store, since), err
		case model.BuiltinTasksByTrace:
			ts, err := introspect.ByTrace(store, at, str(p, "trace_id"), false)
			return noted(introspect.Text(ts), store, at.AddDate(0, 0, -introspect.TraceDays)), err
		case model.BuiltinTasksLastFailed:
			limit, err := integer(p, "limit", 10)
			if err != nil {
				return "", err
			}
			ts, err := introspect.LastFailed(store, at, limit, false)
			return noted(introspect.Text(ts), store, at.AddDate(0, 0, -introspect.FailedDays)), err
		case model.BuiltinBudget:
			st, _, err := state.Replay(store, at)
			if err != nil {
				return "", err
			}
			b, err := json.MarshalIndent(introspect.BudgetReport(cfg, st), "", "  ")
			return string(b), err
		}
		return "", fmt.Errorf("unknown builtin tool %q", name)
	}
}

// noted adds to a listing what it could not see: in a sparse checkout,
// the runs before the oldest ledger file there.
func noted(text string, store *ledger.Store, since time.Time) string {
	if m := introspect.Missing(store, since); m != "" {
		text += "note: " + m + "\n"
	}
	return text
}

// Since reads a "since" value: a duration back from now (72h, 7d) or an
// RFC3339 time; "" is the zero time (no bound).
func Since(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	d, err := model.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("since %q: use a duration such as 72h or 7d, or an RFC3339 time", s)
	}
	return now.Add(-d.D()), nil
}

func str(p map[string]any, k string) string { s, _ := p[k].(string); return s }

// integer reads a whole number from a payload. Payloads come from YAML
// (int) or JSON (float64), so both are accepted; anything else, or a
// fraction, is an error rather than a silent default.
func integer(p map[string]any, k string, def int) (int, error) {
	switch v := p[k].(type) {
	case nil:
		return def, nil
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case uint64:
		if v <= math.MaxInt32 {
			return int(v), nil
		}
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= math.MaxInt32 {
			return int(v), nil
		}
	}
	return 0, fmt.Errorf("payload %s must be a whole number, not %v", k, p[k])
}
