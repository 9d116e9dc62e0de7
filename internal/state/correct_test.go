package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// A clock correction, replayed, voids what was decided after After and
// ends what the wrong clock left open; a checkpoint carries the slots that
// ran early until their schedule decides them.
func ts(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }

// clockFixture is a state recorded partly under a clock a year ahead; the
// correction names after, recorded at at.
func clockFixture() (st *State, after, at time.Time) {
	after, at = ts("2026-11-22T01:30:00Z"), ts("2026-11-22T05:10:00Z")
	ahead := ts("2027-11-22T00:00:30Z")
	st = New(at)
	st.Schedules["h"] = &Schedule{CreatedAt: ts("2026-11-22T00:00:30Z"), LastSlot: ts("2027-11-22T00:00:00Z"), DecidedAt: ahead}
	st.Schedules["fresh"] = &Schedule{CreatedAt: ahead}
	st.Schedules["right"] = &Schedule{CreatedAt: ts("2026-11-22T00:00:30Z"), LastSlot: ts("2026-11-22T01:00:00Z"), DecidedAt: ts("2026-11-22T01:00:30Z")}
	st.putOpen("h@2027-11-22T02:00:00Z", &Open{ScheduleID: "h", Status: OpenClaimed, ClaimedAt: ahead, Deadline: ahead.Add(15 * time.Minute), Tier: 1, Reserve: 500000})
	st.putOpen("right@2026-11-22T01:00:00Z", &Open{ScheduleID: "right", Status: OpenClaimed, ClaimedAt: ts("2026-11-22T01:00:30Z"), Deadline: ts("2026-11-22T01:15:30Z")})
	st.putOpen("h@2027-11-22T03:00:00Z", &Open{ScheduleID: "h", Status: OpenRetry, RetryAt: ahead.Add(time.Hour)})
	st.Approvals["h"] = &Approval{Status: ledger.StatusPending, RequestedAt: ahead}
	st.Approvals["right"] = &Approval{Status: ledger.StatusApproved, RequestedAt: ahead}
	st.Done["h@manual:x"] = ahead
	st.ActorRuns["astra"] = []time.Time{ts("2026-11-22T01:00:30Z"), ahead}
	return st, after, at
}

func correct(st *State, after, at time.Time) {
	d, _ := json.Marshal(Correction{After: after, Early: map[string]time.Time{"h@2027-11-22T00:00:00Z": ts("2027-11-22T00:00:00Z")}})
	st.Apply(&ledger.Event{TS: at, Event: ledger.ClockCorrected, Status: ledger.StatusCorrected, Detail: d})
}

func TestClockCorrectionVoids(t *testing.T) {
	st, after, at := clockFixture()
	if v := st.Voids(after, at); len(v.Keys) != 1 || len(v.Actors) != 1 || len(v.Claims) != 1 || len(v.Retries) != 1 || len(v.Approvals) != 1 || len(v.Slots) != 1 {
		t.Fatalf("voids %+v", v)
	}
	correct(st, after, at)
	if v := st.Voids(after, at); len(v.Slots) != 0 || len(v.Retries) != 0 || len(v.Approvals) != 0 || len(v.Keys) != 0 || len(v.Actors) != 0 {
		t.Errorf("a second correction would void %+v", v)
	}
}

func TestClockCorrection(t *testing.T) {
	st, after, at := clockFixture()
	correct(st, after, at)

	if h := st.Schedules["h"]; !h.LastSlot.Equal(after) || !h.DecidedAt.Equal(after) || !st.Schedules["fresh"].CreatedAt.Equal(after) {
		t.Errorf("h %+v, fresh %+v", h, st.Schedules["fresh"])
	}
	if r := st.Schedules["right"]; !r.LastSlot.Equal(ts("2026-11-22T01:00:00Z")) {
		t.Errorf("a decision before After changed: %+v", r)
	}
	if o := st.Open["h@2027-11-22T02:00:00Z"]; !o.Deadline.Equal(at) || st.Open["right@2026-11-22T01:00:00Z"].Deadline.Equal(at) {
		t.Errorf("claims: %+v", o)
	}
	if o := st.Open["h@2027-11-22T03:00:00Z"]; !o.RetryAt.Equal(at) {
		t.Errorf("retry: %+v", o)
	}
	if st.Approvals["h"] != nil || st.Approvals["right"] == nil {
		t.Errorf("approvals: %v", st.Approvals)
	}
	if !st.Done["h@manual:x"].Equal(at) || len(st.ActorRuns["astra"]) != 1 {
		t.Errorf("done %v, runs %v", st.Done, st.ActorRuns)
	}
	if !st.RanEarly("h@2027-11-22T00:00:00Z") || st.RanEarly("h@2027-11-22T01:00:00Z") {
		t.Errorf("early %v", st.Early)
	}
}

func TestClockCorrectionCheckpoint(t *testing.T) {
	st, after, at := clockFixture()
	correct(st, after, at)
	var snap snapshot
	if err := json.Unmarshal(st.Checkpoint(at)[0].Detail, &snap); err != nil || len(snap.Early) != 1 {
		t.Fatalf("the checkpoint carries %v (%v)", snap.Early, err)
	}
	st.Schedules["h"].LastSlot, snap = ts("2027-11-22T00:00:00Z"), snapshot{}
	if err := json.Unmarshal(st.Checkpoint(at)[0].Detail, &snap); err != nil || len(snap.Early) != 0 {
		t.Fatalf("a decided early slot is still carried: %v", snap.Early)
	}
}
