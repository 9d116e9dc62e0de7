// Package memory reads agent memory: results that memory_update
// runs stored in var/memory with their provenance, recalled newest first
// within a retrieval budget, and purged (quarantined) by provenance.
package memory

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/state"
)

// Entry is one stored memory.
type Entry struct {
	ScheduleID      string    `json:"schedule_id"`
	RunID           string    `json:"run_id"`
	TraceID         string    `json:"trace_id,omitempty"`
	At              time.Time `json:"at"`
	Text            string    `json:"text"`
	EstimatedTokens int64     `json:"estimated_tokens"`
	Purged          bool      `json:"purged,omitempty"`
}

// estimateTokens is a conservative 3 characters per token,
// computed once at write time.
func estimateTokens(text string) int64 { return int64(math.Ceil(float64(len(text)) / 3)) }

// Stored is the memory.stored event of a finished run.
func Stored(e *ledger.Event, text string) *ledger.Event {
	return &ledger.Event{Event: ledger.MemoryStored, ScheduleID: e.ScheduleID, Slot: e.Slot, IdempotencyKey: e.IdempotencyKey,
		Actor: e.Actor, Tenant: e.Tenant, Tool: e.Tool, Tier: e.Tier, Status: ledger.StatusStored, TraceID: e.TraceID, Mode: e.Mode,
		Attempt: e.Attempt, Output: text, Usage: ledger.Usage{Tokens: estimateTokens(text)}}
}

// purgeDetail says which provenance a memory.purged event quarantines: a
// schedule id (all its entries) or a run (its key, optionally with #attempt).
type purgeDetail struct {
	Task  string `json:"task"`
	Count int    `json:"count"`
}

// Purged is a memory.purged event.
func Purged(task, by string, count int) *ledger.Event {
	d, _ := json.Marshal(purgeDetail{Task: task, Count: count})
	return &ledger.Event{Event: ledger.MemoryPurged, Status: ledger.StatusPurged, By: by, Detail: d}
}

func (e Entry) matches(task string) bool {
	return e.ScheduleID == task || e.RunID == task || strings.SplitN(e.RunID, "#", 2)[0] == task
}

// Read returns the entries of the current and previous month, oldest
// first, with purges applied.
func Read(root string, now time.Time) ([]Entry, error) {
	store := ledger.OpenDir(root, state.MemoryDir, 0)
	segs, err := store.Segments()
	if err != nil {
		return nil, err
	}
	from := ledger.Month(now.AddDate(0, -1, 0))
	i := sort.Search(len(segs), func(i int) bool { return segs[i].Month >= from })
	var out []Entry
	_, err = ledger.Scan(root, segs[i:], ledger.ScanOptions{}, func(e *ledger.Event) error {
		switch e.Event {
		case ledger.MemoryStored:
			out = append(out, Entry{ScheduleID: e.ScheduleID, RunID: e.RunID(), TraceID: e.TraceID, At: e.TS, Text: e.Output,
				EstimatedTokens: e.Usage.Tokens})
		case ledger.MemoryPurged:
			var d purgeDetail
			if json.Unmarshal(e.Detail, &d) == nil && d.Task != "" {
				for k := range out {
					if out[k].matches(d.Task) {
						out[k].Purged = true
					}
				}
			}
		}
		return nil
	})
	return out, err
}

// Select counts the live entries a purge of task would quarantine.
func Select(entries []Entry, task string) int {
	n := 0
	for _, e := range entries {
		if !e.Purged && e.matches(task) {
			n++
		}
	}
	return n
}

// TaskType maps a run to the task types of retrieval budgets:
// interval schedules are heartbeats, chained steps workflows, manual runs
// interactive.
func TaskType(sc *model.Schedule, mode string, chained bool) string {
	switch {
	case chained:
		return "workflow"
	case mode == ledger.ModeManual:
		return "interactive"
	case mode == ledger.ModeEvent:
		return "event"
	case sc.Interval > 0 || strings.HasPrefix(sc.Cron, "@every"):
		return "heartbeat"
	}
	return "scheduled"
}

// Recall picks the newest live entries within the budget (sum
// the pre-computed estimated_tokens, stop when the budget is reached).
func Recall(entries []Entry, budget model.Recall) []Entry {
	var out []Entry
	var tokens int64
	for i := len(entries) - 1; i >= 0 && len(out) < budget.MaxEntries; i-- {
		e := entries[i]
		if e.Purged {
			continue
		}
		if tokens+e.EstimatedTokens > int64(budget.MaxTokens) {
			break
		}
		tokens += e.EstimatedTokens
		out = append(out, e)
	}
	return out
}

// Budget fills zero fields of a schedule's recall from the task type's defaults.
func Budget(r model.Recall, taskType string) model.Recall {
	d := model.RecallDefaults[taskType]
	if r.MaxTokens == 0 {
		r.MaxTokens = d.MaxTokens
	}
	if r.MaxEntries == 0 {
		r.MaxEntries = d.MaxEntries
	}
	return r
}
