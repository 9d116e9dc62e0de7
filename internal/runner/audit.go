package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
)

// DroppedDetail is the Detail of catchup.dropped: the slots one schedule's
// catch-up policy left out in one run, as a count and its bounds.
type DroppedDetail struct {
	Count  int       `json:"count"`
	More   bool      `json:"more,omitempty"` // Count covers only the last 5 years: there were more
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	Policy string    `json:"policy"`
	Window string    `json:"window"`
	For    string    `json:"for,omitempty"` // the slot decided instead (its idempotency key)
}

// recordDropped records what c's catch-up policy left out, once per
// schedule and run: called when c's own decision is recorded, so a
// candidate left for a later run leaves its dropped slots to that run too.
func (s *session) recordDropped(c plan.Candidate) error {
	if c.Missed == 0 {
		return nil
	}
	sc := c.Schedule
	d := DroppedDetail{Count: c.Missed, More: c.MissedMore, First: c.MissedFirst.UTC(), Last: c.MissedLast.UTC(),
		Policy: sc.Catchup.Policy, Window: strings.TrimSuffix(strings.TrimSuffix(sc.Catchup.Window.D().String(), "0s"), "0m"), For: c.Key}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	count := fmt.Sprint(d.Count)
	if d.More {
		count = fmt.Sprintf("more than %d", d.Count)
	}
	ev := &ledger.Event{Event: ledger.CatchupDropped, ScheduleID: sc.ID, Slot: d.Last, Actor: sc.Actor, Tenant: sc.Tenant,
		Tool: sc.TargetTool, Tier: int(sc.SafetyTier), Status: ledger.StatusDropped, Reason: ledger.ReasonMissed, Mode: ledger.ModeScheduled,
		Detail: b, Error: fmt.Sprintf("%s missed slot(s) from %s to %s left out by catch-up policy %s (window %s)",
			count, d.First.Format(time.RFC3339), d.Last.Format(time.RFC3339), d.Policy, d.Window)}
	return s.record(ev)
}

// changeHistory is git's answer to "who changed these files"
// (gitops.Repo). A Syncer without it records schedule changes without
// their commit.
type changeHistory interface {
	LastChanges(from string, paths []string, limit int) (map[string]gitops.Change, error)
	CheckoutHead() (string, error)
}

// schedulesDir is where schedule files live (config.SchedulesDir).
const schedulesDir = "schedules"

// PauseDetail is the Detail of the run.skipped (reason disabled) that a
// schedule enabled again records once: the slots that fell while it was
// disabled, as a count and its bounds. None of them runs later.
type PauseDetail struct {
	Count int       `json:"count"`
	More  bool      `json:"more,omitempty"` // Count covers only the last 5 years: there were more
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	Since time.Time `json:"disabled_at,omitzero"` // when the ledger first saw it disabled
}

// pause is a schedule enabled again, and since when the ledger knew it
// disabled.
type pause struct {
	sc    *model.Schedule
	since time.Time
}

// recordPause records, once, the slots that fell while a schedule was
// disabled, as one skip of the newest (so its next slot is its first
// after now, and its catch-up policy applies from now).
func (s *session) recordPause(p pause) error {
	sc := p.sc
	c, ok := plan.Disabled(sc, s.state(), s.now)
	if !ok {
		return nil
	}
	d := PauseDetail{Count: c.Missed, More: c.MissedMore, First: c.MissedFirst.UTC(), Last: c.MissedLast.UTC(), Since: p.since}
	count := fmt.Sprint(d.Count)
	if d.More {
		count = "more than " + count
	}
	t := s.newTask(c.Kind, sc, c.Slot, c.Key, c.Mode, 1, "")
	detail := fmt.Sprintf("%s slot(s) from %s to %s fell while the schedule was disabled: none runs later", count, d.First.Format(time.RFC3339), d.Last.Format(time.RFC3339))
	t.outcome.Action, t.outcome.Reason, t.outcome.Detail = ActionSkipped, ledger.ReasonDisabled, detail
	ev := s.skipEvent(t, ledger.ReasonDisabled, detail)
	ev.Detail, _ = json.Marshal(d)
	return s.record(ev)
}

// maxHistoryWalk bounds the commits read to find who changed a schedule
// file: astra commits every run, so this covers weeks of a busy
// repository; beyond it a change is recorded without its commit.
const maxHistoryWalk = 5000

// ScheduleChange is the Detail of schedule.created, .updated and .deleted:
// the file and the commit that last changed it.
type ScheduleChange struct {
	File    string    `json:"file"`
	Commit  string    `json:"commit,omitempty"`
	Author  string    `json:"author,omitempty"`
	Email   string    `json:"email,omitempty"`
	When    time.Time `json:"committed_at,omitzero"`
	Shallow bool      `json:"shallow,omitempty"` // the checkout's history ends at Commit: the change is in it or before it
	// Changed: what a schedule.updated changed, when the ledger knew the
	// settings before; Settings: all of them now (see settingsOf).
	Changed  []FieldChange     `json:"changed,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`
}

// attribute adds to each schedule event the file that defines (or
// defined) the schedule and the commit that last changed it: one history
// walk for all of them, only in runs that record a change. A deleted
// schedule's file is no longer known: its change is the last one to
// schedules/.
//
// details holds, by schedule id, what the event says besides: its
// settings and what changed.
func (s *session) attribute(evs []*ledger.Event, details map[string]ScheduleChange) {
	if len(evs) == 0 {
		return
	}
	files := map[string]string{}
	for _, sc := range s.r.cfg.Schedules {
		files[sc.ID] = sc.Meta.Pos.File
	}
	fileOf := func(ev *ledger.Event) string {
		if f := files[ev.ScheduleID]; f != "" && ev.Event != ledger.ScheduleDeleted {
			return f
		}
		return schedulesDir
	}
	var paths []string
	for _, ev := range evs {
		paths = append(paths, fileOf(ev))
	}
	var changes map[string]gitops.Change
	if hist, ok := s.r.git.(changeHistory); ok {
		var err error
		if changes, err = hist.LastChanges(s.r.cfgCommit, dedupe(paths), maxHistoryWalk); err != nil {
			s.report.Warnings = append(s.report.Warnings, fmt.Sprintf("finding who changed the schedules: %v", err))
		}
	}
	for _, ev := range evs {
		ch := details[ev.ScheduleID]
		ch.File = fileOf(ev)
		if c, ok := changes[ch.File]; ok {
			ch.Commit, ch.Author, ch.Email, ch.When, ch.Shallow = c.Commit, c.Author, c.Email, c.When, c.Shallow
		}
		ev.Detail, _ = json.Marshal(ch)
	}
}
