package state

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// ruleEvent is an approval event of schedule id's slot at seq.
func ruleEvent(seq int64, kind ledger.Kind, id string, slot time.Time, by string, d ApprovalDetail) *ledger.Event {
	e := run(id, slot, kind, 2)
	e.Seq, e.By = seq, by
	e.Detail, _ = json.Marshal(d)
	if d.Via == ViaPullRequest {
		e.PR = 7
	}
	return e
}

// requested gives a request its pull request, #7, as ruleEvent's
// approvals through a pull request name.
func requested(e *ledger.Event) *ledger.Event {
	e.PR = 7
	return e
}

// partial makes e one approval of several an approval needs.
func partial(e *ledger.Event) *ledger.Event {
	e.Status = ledger.StatusPartial
	return e
}

func rules(b []Breach) []string {
	var out []string
	for _, x := range b {
		out = append(out, x.Rule)
	}
	return out
}

// TestRulesFindForgedApprovals: replay notes every approval event the
// ledger's rules forbid where it stands, and only those.
func TestRulesFindForgedApprovals(t *testing.T) {
	slot := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	signed := ApprovalDetail{Via: ViaSignature, Signer: "SHA256:k", Token: "tok"}
	merged := ApprovalDetail{Via: ViaPullRequest, Token: "pr-tok"}
	quorum := ApprovalDetail{Via: ViaSignature, Signer: "SHA256:k", Required: 2}
	for _, c := range []struct {
		name string
		evs  []*ledger.Event
		want []string
	}{
		{"approved, then consumed", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", signed),
			ruleEvent(2, ledger.ApprovalConsumed, "a", slot, "alice", signed),
		}, nil},
		{"requested, approved through its pull request, then consumed", []*ledger.Event{
			requested(ruleEvent(1, ledger.ApprovalRequested, "a", slot, "", ApprovalDetail{})),
			ruleEvent(2, ledger.ApprovalApproved, "a", slot, "alice", merged),
			ruleEvent(3, ledger.ApprovalConsumed, "a", slot, "alice", merged),
		}, nil},
		{"approved through a pull request nothing requested", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", merged),
		}, []string{RuleUnproven}},
		{"approved through another request's pull request", []*ledger.Event{
			requested(ruleEvent(1, ledger.ApprovalRequested, "a", slot.Add(24*time.Hour), "", ApprovalDetail{})),
			ruleEvent(2, ledger.ApprovalApproved, "a", slot, "alice", merged),
		}, []string{RuleUnproven}},
		{"consumed without an approval", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalConsumed, "a", slot, "alice", signed),
		}, []string{RuleUnapproved}},
		{"consumed twice", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", signed),
			ruleEvent(2, ledger.ApprovalConsumed, "a", slot, "alice", signed),
			ruleEvent(3, ledger.ApprovalConsumed, "a", slot, "alice", signed),
		}, []string{RuleUnapproved}},
		{"consumed while only requested", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalRequested, "a", slot, "", ApprovalDetail{}),
			ruleEvent(2, ledger.ApprovalConsumed, "a", slot, "alice", signed),
		}, []string{RuleUnapproved}},
		{"consumed for another slot", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", signed),
			ruleEvent(2, ledger.ApprovalConsumed, "a", slot.Add(time.Hour), "alice", signed),
		}, []string{RuleUnapproved}},
		{"consumed naming another approver", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", signed),
			ruleEvent(2, ledger.ApprovalConsumed, "a", slot, "mallory", signed),
		}, []string{RuleUnapproved}},
		{"approved by nobody", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "", signed),
		}, []string{RuleUnproven}},
		{"approved by an unverified identity", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice (unverified)", signed),
		}, []string{RuleUnproven}},
		{"signed without a key", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", ApprovalDetail{Via: ViaSignature}),
		}, []string{RuleUnproven}},
		{"approved again with a used token", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", signed),
			ruleEvent(2, ledger.ApprovalConsumed, "a", slot, "alice", signed),
			ruleEvent(3, ledger.ApprovalApproved, "a", slot.Add(time.Hour), "alice", signed),
		}, []string{RuleReused}},
		{"two distinct approvers of two, then consumed", []*ledger.Event{
			partial(ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", quorum)),
			ruleEvent(2, ledger.ApprovalApproved, "a", slot, "bob", quorum),
			ruleEvent(3, ledger.ApprovalConsumed, "a", slot, "bob", quorum),
		}, nil},
		{"consumed with one approver of two", []*ledger.Event{
			partial(ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", quorum)),
			ruleEvent(2, ledger.ApprovalConsumed, "a", slot, "alice", quorum),
		}, []string{RuleUnapproved}},
		{"completed by the same approver twice", []*ledger.Event{
			partial(ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", quorum)),
			ruleEvent(2, ledger.ApprovalApproved, "a", slot, "ALICE", quorum),
		}, []string{RuleShort}},
		{"completed alone", []*ledger.Event{
			ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", quorum),
		}, []string{RuleShort}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := New(slot)
			for _, e := range c.evs {
				if e.Event == ledger.ApprovalConsumed {
					e.ExpiresAt = slot.Add(time.Hour)
				}
				st.Apply(e)
			}
			if got := rules(st.Breaches()); !slices.Equal(got, c.want) {
				t.Fatalf("breaches %v, want %v", got, c.want)
			}
		})
	}
}

// TestReportedBreachesAreForgotten: a ledger.tampered that names a breach
// ends it; one it does not name stays, through a month's checkpoint too,
// as does the tampering itself until a trust.resumed.
func TestReportedBreachesAreForgotten(t *testing.T) {
	slot := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	st := New(slot)
	st.Apply(ruleEvent(1, ledger.ApprovalConsumed, "a", slot, "alice", ApprovalDetail{}))
	st.Apply(ruleEvent(2, ledger.ApprovalConsumed, "b", slot, "alice", ApprovalDetail{}))
	d, _ := json.Marshal(BreachDetail{Breaches: st.Breaches()[:1]})
	st.Apply(&ledger.Event{Seq: 3, TS: slot, Event: ledger.LedgerTampered, Detail: d})
	if b := st.Breaches(); len(b) != 1 || b[0].Schedule != "b" {
		t.Fatalf("breaches after the report of the first: %+v", b)
	}
	// A report that names what replay did not find, or finds only after
	// it, excuses nothing.
	forged, _ := json.Marshal(BreachDetail{Breaches: []Breach{{Seq: 5, Event: ledger.ApprovalConsumed, Rule: RuleUnapproved}, {Seq: 2, Event: ledger.ApprovalConsumed, Rule: RuleReused}}})
	st.Apply(&ledger.Event{Seq: 4, TS: slot, Event: ledger.LedgerTampered, Detail: forged})
	st.Apply(ruleEvent(5, ledger.ApprovalConsumed, "c", slot, "alice", ApprovalDetail{}))
	if b := st.Breaches(); len(b) != 2 || b[0].Schedule != "b" || b[1].Schedule != "c" || st.Found(6) {
		t.Fatalf("breaches after a forged report: %+v", b)
	}
	st.Apply(&ledger.Event{Seq: 6, TS: slot, Event: ledger.LedgerTampered, Detail: mustJSON(t, BreachDetail{Breaches: st.Breaches()[1:]})})
	next := New(slot.AddDate(0, 0, 1))
	for _, e := range st.Checkpoint(slot.AddDate(0, 0, 1)) {
		next.Apply(e)
	}
	if b := next.Breaches(); len(b) != 1 || b[0].Schedule != "b" || len(next.Tampered) != 3 {
		t.Fatalf("after the checkpoint: breaches %+v, tampered %v", b, next.Tampered)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A partial approval signed ahead, with nothing requested, keeps its
// token's expiry: the next approver's signature, a run later, finds it.
func TestPartialApprovalAheadKeepsItsExpiry(t *testing.T) {
	slot := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e := partial(ruleEvent(1, ledger.ApprovalApproved, "a", slot, "alice", ApprovalDetail{Via: ViaSignature, Signer: "SHA256:k", Required: 2}))
	e.ExpiresAt = slot.Add(24 * time.Hour)
	s := New(slot.Add(-8 * time.Hour))
	s.Apply(e)
	if a := s.Approvals["a"]; a == nil || a.Status != ledger.StatusPartial || !a.ExpiresAt.Equal(e.ExpiresAt) {
		t.Fatalf("approval: %+v", a)
	}
}
