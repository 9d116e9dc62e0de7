package ledgerops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/state"
)

// verified is a ledger of three events with its snapshot, as a run leaves
// it, and the anchors its commit recorded.
func verified(t *testing.T) (root string, anchors []ledger.Anchor) {
	root = t.TempDir()
	j := record(t, root, "a", "b", "c")
	if err := j.SaveSnapshot(); err != nil {
		t.Fatal(err)
	}
	return root, j.Anchors()
}

// commitOf is a commit message carrying anchors, as astra's commits do.
func commitOf(anchors ...ledger.Anchor) gitops.CommitMessage {
	return gitops.CommitMessage{Commit: strings.Repeat("ab", 20), Message: "astra: 1 ran\n\n" + ledger.FormatAnchors(anchors)}
}

func TestVerifyIntact(t *testing.T) {
	root, anchors := verified(t)
	v, err := Verify(root, 0, fakeHistory{msgs: []gitops.CommitMessage{commitOf(anchors...)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Damaged() || len(v) != 3 {
		t.Fatalf("verification %+v", v)
	}
	if c := v[0]; c.Log != ledger.Dir || c.Files != 1 || c.Events != 3 || c.Last != anchors[0].Hash {
		t.Fatalf("ledger check %+v", c)
	}
	if c := v[1]; c.Log != ledger.ApprovalLogDir || c.Events != 0 {
		t.Fatalf("approval log check %+v", c)
	}
	if c := v[2]; c.Log != state.SnapshotPath || c.Events != 3 || c.Note != "" {
		t.Fatalf("snapshot check %+v", c)
	}
}

// Damage is a check naming the first bad file:line with what to do, not
// an error; the snapshot is not compared with a damaged ledger.
func TestVerifyNamesDamage(t *testing.T) {
	root, _ := tornLedger(t)
	v, err := Verify(root, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Damaged() || len(v) != 2 {
		t.Fatalf("verification %+v", v)
	}
	c := v[0]
	if !c.Damaged() || c.File != segment || c.Line != 4 || !strings.HasPrefix(c.Error, segment+":4: ledger truncated error") ||
		!strings.Contains(c.Hint, "astra run-due --repair") {
		t.Fatalf("ledger check %+v", c)
	}
	if v[1].Damaged() {
		t.Fatalf("approval log check %+v", v[1])
	}
}

// The heads astra's commits anchored are checked: a last line that
// differs from its anchor is found, which no hash chain can see. Without
// git, or when its history cannot be read, the chains still are.
func TestVerifyAnchors(t *testing.T) {
	root, anchors := verified(t)
	edited := anchors[0]
	edited.Hash = strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		git  History
		bad  bool
	}{
		{"anchors hold", fakeHistory{msgs: []gitops.CommitMessage{commitOf(anchors...)}}, false},
		{"a head differs", fakeHistory{msgs: []gitops.CommitMessage{commitOf(edited)}}, true},
		{"no commits yet", fakeHistory{msgs: []gitops.CommitMessage{commitOf(edited)}, err: errors.New("reference not found")}, false},
		{"no git", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Verify(root, 0, tc.git, nil)
			if err != nil || v.Damaged() != tc.bad {
				t.Fatalf("verification %+v, %v", v, err)
			}
			if tc.bad && (v[0].File != segment || v[0].Line != 3 || !strings.Contains(v[0].Error, "ledger anchor error") ||
				!strings.Contains(v[0].Error, "abababababab")) {
				t.Fatalf("ledger check %+v", v[0])
			}
		})
	}
}

// A snapshot that differs from a replay of the ledger is damage too, with
// how to fix it; one that cannot be compared says why.
func TestVerifySnapshot(t *testing.T) {
	root, _ := verified(t)
	dead := filepath.Join(root, filepath.FromSlash(state.DeadLettersPath))
	if err := os.WriteFile(dead, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(root, 0, nil, nil)
	if err != nil || !v.Damaged() || len(v) != 3 {
		t.Fatalf("verification %+v, %v", v, err)
	}
	if c := v[2]; !c.Damaged() || !strings.Contains(c.Error, state.DeadLettersPath) || !strings.Contains(c.Hint, "delete "+state.SnapshotPath) {
		t.Fatalf("snapshot check %+v", c)
	}

	root = t.TempDir()
	record(t, root, "a")
	v, err = Verify(root, 0, nil, nil)
	if err != nil || v.Damaged() || !strings.Contains(v[2].Note, "there is no "+state.SnapshotPath) {
		t.Fatalf("verification %+v, %v", v, err)
	}
}

// Anchors are read back to the month's start, not from a fixed number of
// recent commits: a head anchored 60 commits back that the ledger no
// longer holds is found.
func TestVerifyAnchorsOfTheWholeMonth(t *testing.T) {
	root, anchors := verified(t)
	edited := anchors[0]
	edited.Hash = strings.Repeat("0", 64)
	msgs := []gitops.CommitMessage{commitOf(anchors...)}
	for range 59 {
		msgs = append(msgs, gitops.CommitMessage{Commit: strings.Repeat("cd", 20), Message: "a person's commit"})
	}
	msgs = append(msgs, commitOf(edited))
	older := ledger.Anchor{File: ledger.Dir + "/2026-10.ndjson.gz", Seq: 9, Hash: strings.Repeat("1", 64)}
	msgs = append(msgs, commitOf(older), commitOf(edited))
	v, err := Verify(root, 0, fakeHistory{msgs: msgs}, nil)
	if err != nil || !v.Damaged() || !strings.Contains(v[0].Error, "ledger anchor error") {
		t.Fatalf("verification %+v, %v", v, err)
	}
	// The walk stops at the first commit of an older month, and does not
	// hold the checkout to that month's files.
	v, err = Verify(root, 0, fakeHistory{msgs: msgs[:1:1]}, nil)
	if err != nil || v.Damaged() {
		t.Fatalf("verification %+v, %v", v, err)
	}
	v, err = Verify(root, 0, fakeHistory{msgs: append([]gitops.CommitMessage{commitOf(anchors...), commitOf(older)}, commitOf(edited))}, nil)
	if err != nil || v.Damaged() {
		t.Fatalf("a commit before the month's start was read: %+v, %v", v, err)
	}
}

// An event that breaks the ledger's rules, and that no ledger.tampered
// reports, is damage: an approval used that nobody approved.
func TestVerifyHoldsTheRules(t *testing.T) {
	root := t.TempDir()
	j := record(t, root, "a")
	consumed := &ledger.Event{Event: ledger.ApprovalConsumed, ScheduleID: "a", IdempotencyKey: "a@2026-11-22T09:00:00Z", Status: ledger.StatusConsumed, By: "octocat"}
	if err := j.Record(consumed); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(root, 0, nil, nil)
	if err != nil || !v.Damaged() {
		t.Fatalf("verification %+v, %v", v, err)
	}
	c := v[len(v)-2]
	if c.Log != "rules" || !strings.Contains(c.Error, "no approval of this run is open") || !strings.Contains(c.Hint, "trust resume") {
		t.Fatalf("rules check %+v", c)
	}
	// Reported by a run, it is no longer damage.
	d := []byte(`{"breaches":[{"seq":2,"event":"approval.consumed","rule":"consumed_unapproved","why":"x"}]}`)
	if err := j.Record(&ledger.Event{Event: ledger.LedgerTampered, Status: ledger.StatusRestored, Detail: d}); err != nil {
		t.Fatal(err)
	}
	if v, err = Verify(root, 0, nil, nil); err != nil || v.Damaged() {
		t.Fatalf("verification %+v, %v", v, err)
	}
}
