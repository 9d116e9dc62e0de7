// Package ledgertest generates realistic ledgers for benchmarks: many
// schedules, a month of cron runs every five minutes, each run appending
// one gzip member of claims, outcomes, skips and the occasional retry,
// approval or budget event.
package ledgertest

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/money"
)

// Options size a generated ledger.
type Options struct {
	Schedules   int       // distinct schedule ids (default 2000)
	Events      int       // total events (default 1,000,000)
	Month       time.Time // any time in the month to fill (default November 2026)
	SegmentSize int64     // default ledger.DefaultSegmentSize
	Seed        uint64
	Seals       *ledger.Seals // seal every member (a sealed ledger); nil: not sealed
}

// ScheduleID is the id of generated schedule i.
func ScheduleID(i int) string { return fmt.Sprintf("sch_%08x", uint32(i)*2654435761) }

var (
	tools  = []string{"execute_goal", "tasks_last_failed", "local.summarize", "deploy_to_vercel", "send_email", "climate.create_single_mission", "zora_shop.create_project", "astra.desires.record"}
	actors = []string{"astra", "admin", "n8n_workflow_newsletter", "agent_oracle", "agent_lumina", "agent_connor", "user_alice"}
	skips  = []string{ledger.ReasonBudget, ledger.ReasonApprovalPending, ledger.ReasonRateLimited, ledger.ReasonPaused, ledger.ReasonMissed}
	words  = []string{"planned", "goal", "for", "run", "ok", "created", "mission", "summary", "of", "3", "tasks", "no", "failures", "in", "the", "last", "day", "wrote", "2", "files"}
)

// Generate writes a ledger under root and returns its tail.
func Generate(root string, o Options) (ledger.Tail, error) {
	if o.Schedules == 0 {
		o.Schedules = 2000
	}
	if o.Events == 0 {
		o.Events = 1_000_000
	}
	if o.Month.IsZero() {
		o.Month = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	}
	start := time.Date(o.Month.Year(), o.Month.Month(), 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(o.Seed, 42))
	store := ledger.Open(root, o.SegmentSize).NoSync().Sealed(o.Seals)
	var tail ledger.Tail
	runs := 30 * 24 * 12 // every five minutes for a month
	perRun := max(1, (o.Events+runs-1)/runs)
	written := 0
	trace := make([]byte, 16)
	for run := 0; written < o.Events; run++ {
		now := start.Add(time.Duration(run) * 5 * time.Minute)
		slot := now.Truncate(5 * time.Minute)
		var evs []*ledger.Event
		for len(evs) < perRun && written+len(evs) < o.Events {
			i := r.IntN(o.Schedules)
			id := ScheduleID(i)
			for k := range trace {
				trace[k] = byte(r.Uint32())
			}
			base := ledger.Event{
				TS: now.Add(time.Duration(len(evs)) * time.Second), ScheduleID: id, Slot: slot, IdempotencyKey: id + "@" + slot.Format(time.RFC3339),
				Actor: actors[i%len(actors)], Tool: tools[i%len(tools)], Tier: i % 3, TraceID: hex.EncodeToString(trace),
				Mode: ledger.ModeScheduled, Attempt: 1,
			}
			p := r.IntN(100)
			if o.Events-written-len(evs) < 2 {
				p = 80 // room for one event only: a skip
			}
			switch {
			case p < 70: // a run: claimed, then completed or failed
				c := base
				c.Event, c.Status, c.Runner = ledger.RunClaimed, "claimed", "gh-8812345-1"
				c.ExpiresAt = now.Add(10 * time.Minute)
				done := base
				done.Event, done.Status = ledger.RunCompleted, "ok"
				done.Usage = ledger.Usage{Tokens: int64(r.IntN(4000)), Cost: money.USD(r.IntN(2000) * 10), WallClockMS: int64(r.IntN(30000)), ToolCalls: int64(1 + r.IntN(4))}
				if r.IntN(20) == 0 {
					done.Event, done.Status, done.Reason, done.Error = ledger.RunFailed, "failed", ledger.ReasonExit, "exit status 1"
				}
				done.Output = sentence(r, 4+r.IntN(16))
				evs = append(evs, &c, &done)
			case p < 95:
				s := base
				s.Event, s.Status, s.Reason = ledger.RunSkipped, "skipped", skips[r.IntN(len(skips))]
				evs = append(evs, &s)
			case p < 97:
				s := base
				s.Event, s.Status, s.Reason, s.Attempt = ledger.RunRetryScheduled, "retry", ledger.ReasonExit, 2
				s.RetryAt = now.Add(10 * time.Second)
				evs = append(evs, &s)
			case p < 98:
				s := base
				s.Event, s.Status, s.Reason, s.Attempt, s.Error = ledger.RunDeadLettered, "dead_letter", ledger.ReasonExit, 3, "exit status 1"
				evs = append(evs, &s)
			default:
				s := base
				s.Event, s.Status, s.PR = ledger.ApprovalRequested, "pending", 100+r.IntN(900)
				s.ExpiresAt, s.PayloadHash = now.Add(24*time.Hour), "sha256:"+hex.EncodeToString(trace)+hex.EncodeToString(trace)
				evs = append(evs, &s)
			}
		}
		seg, _ := store.Target(tail, now)
		var err error
		if tail, err = store.Append(tail, seg, evs); err != nil {
			return tail, err
		}
		written += len(evs)
	}
	return tail, nil
}

func sentence(r *rand.Rand, n int) string {
	b := make([]byte, 0, n*6)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, words[r.IntN(len(words))]...)
	}
	return string(b)
}
