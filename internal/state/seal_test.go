package state

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledgerkey"
	"github.com/astra-gitops/astra/internal/seal"
)

func testKeys(t testing.TB) *ledgerkey.Keys {
	t.Helper()
	priv, pub, err := seal.Generate("ledger")
	if err != nil {
		t.Fatal(err)
	}
	s, err := seal.ParseSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ledgerkey.New([]seal.PublicKey{pub}, s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSealedSnapshotEqualsReplay: with a sealed ledger, runs seal the
// snapshot and use it, and it holds what a replay of the month holds.
func TestSealedSnapshotEqualsReplay(t *testing.T) {
	keys := testKeys(t)
	k := newTicks(t, 7)
	k.store.Sealed(keys.Ledger())
	for n := range 40 {
		k.tick(true)
		fast, ftail, err := Replay(k.store, k.now)
		if err != nil || fast.Fallback() != "" {
			t.Fatalf("run %d: %v, fallback %q", n, err, fast.Fallback())
		}
		full, rtail, err := ReplayEach(k.store, k.now, nil)
		if err != nil || ftail != rtail || ftail.Seal == "" {
			t.Fatalf("run %d: %v, tails %+v %+v", n, err, ftail, rtail)
		}
		if d := diffLines(observe(fast), observe(full)); d != "" {
			t.Fatalf("run %d: %s", n, d)
		}
	}
	data, _ := os.ReadFile(filepath.Join(k.root, SnapshotPath))
	if !bytes.Contains(data, []byte("\n"+sealPrefix)) {
		t.Fatal("the snapshot has no seal line")
	}
	if c, err := VerifySnapshot(k.store); err != nil || c.Unsealed != "" || c.Note != "" {
		t.Fatalf("VerifySnapshot = %+v, %v", c, err)
	}
	// The side logs are sealed too.
	for _, s := range []*ledger.Store{ledger.OpenApprovalLog(k.root), ledger.OpenDir(k.root, MemoryDir, 0)} {
		segs, _ := s.Segments()
		if len(segs) == 0 {
			t.Fatalf("%s: nothing written", s.Dir())
		}
		if _, err := ledger.Verify(k.root, segs, keys.Ledger()); err != nil {
			t.Fatal(err)
		}
		tail, err := ledger.Scan(k.root, segs, ledger.ScanOptions{}, func(*ledger.Event) error { return nil })
		if err != nil || tail.Seal == "" {
			t.Fatalf("%s: not sealed: %v", s.Dir(), err)
		}
	}
}

// sealedMonth records an approval request and a run that spent $1.80,
// with a sealed snapshot.
func sealedMonth(t *testing.T, keys *ledgerkey.Keys) (*ledger.Store, time.Time) {
	t.Helper()
	root := t.TempDir()
	store := ledger.Open(root, 0).Sealed(keys.Ledger())
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	st, tail, err := Replay(store, now)
	if err != nil {
		t.Fatal(err)
	}
	j := NewJournal(store, st, tail, func() time.Time { return now }, false)
	if err := j.Record(&ledger.Event{Event: ledger.ApprovalRequested, ScheduleID: "deploy", Status: ledger.StatusPending, PR: 7, ExpiresAt: now.Add(time.Hour)},
		&ledger.Event{Event: ledger.RunCompleted, ScheduleID: "spend", IdempotencyKey: "spend@x", Status: "ok", Usage: ledger.Usage{Cost: 1_800_000}}); err != nil {
		t.Fatal(err)
	}
	if err := j.SaveSnapshot(); err != nil {
		t.Fatal(err)
	}
	return store, now
}

// TestEditedSnapshotIsNotUsed: an approval set to approved and the spend
// cells reset in the snapshot: a sealed ledger does not use it, and says
// why; an unsealed one has nothing to tell it by.
func TestEditedSnapshotIsNotUsed(t *testing.T) {
	keys := testKeys(t)
	store, now := sealedMonth(t, keys)
	file := filepath.Join(store.Root(), SnapshotPath)
	data, _ := os.ReadFile(file)
	edited := strings.Replace(string(data), "\tpending\t7\t", "\tapproved\t7\t", 1)
	edited = strings.ReplaceAll(edited, "\t1800000\t", "\t0\t")
	if edited == string(data) || strings.Count(string(data), "\t1800000\t") != 2 {
		t.Fatal("the edit did not apply")
	}
	os.WriteFile(file, []byte(edited), 0o644)
	st, _, err := Replay(store, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Fallback(), "the state snapshot was not used (it is not sealed by a listed ledger key") {
		t.Fatalf("fallback %q", st.Fallback())
	}
	if st.Approvals["deploy"].Status != "pending" || st.Spend.Day != 1_800_000 {
		t.Fatalf("state from the edited snapshot: %+v, spend %v", st.Approvals["deploy"], st.Spend)
	}
	if c, err := VerifySnapshot(store); err == nil || !strings.Contains(c.Unsealed, "not sealed") {
		t.Fatalf("VerifySnapshot = %+v, %v", c, err)
	}
	// Without keys nothing is authenticated: the snapshot is believed.
	st, _, err = Replay(store.Unsealed(), now)
	if err != nil || st.Fallback() != "" || st.Approvals["deploy"].Status != "approved" {
		t.Fatalf("unsealed: %v %q %+v", err, st.Fallback(), st.Approvals["deploy"])
	}
	// Its seal line dropped, or a seal by another key: not used either.
	signed, _ := cutSeal(data)
	for _, bad := range [][]byte{signed, mustSeal(t, testKeys(t), signed)} {
		os.WriteFile(file, bad, 0o644)
		if st, _, err := Replay(store, now); err != nil || !strings.Contains(st.Fallback(), "not sealed by a listed ledger key") {
			t.Fatalf("%v %q", err, st.Fallback())
		}
	}
}

func mustSeal(t *testing.T, k *ledgerkey.Keys, data []byte) []byte {
	t.Helper()
	out, err := sealSnapshot(k.Ledger(), data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplayStopsAtTheSeal: a member appended without the key (here, an
// approval) is not applied, from the snapshot or from the month, and the
// error says where the sealed part ends.
func TestReplayStopsAtTheSeal(t *testing.T) {
	keys := testKeys(t)
	store, now := sealedMonth(t, keys)
	st, sealedTail, err := Replay(store, now)
	if err != nil {
		t.Fatal(err)
	}
	writer := ledger.Open(store.Root(), 0)
	forged := &ledger.Event{TS: now, Event: ledger.ApprovalApproved, ScheduleID: "deploy", Status: ledger.StatusApproved, By: "mallory"}
	if _, err := writer.Append(sealedTail, sealedTail.Segment, []*ledger.Event{forged}); err != nil {
		t.Fatal(err)
	}
	for _, fromSnapshot := range []bool{true, false} {
		if !fromSnapshot {
			os.Remove(filepath.Join(store.Root(), SnapshotPath))
		}
		got, tail, err := Replay(store, now)
		var u *ledger.UnsealedError
		if !errors.As(err, &u) || u.Applied || tail != sealedTail || u.Sealed != sealedTail {
			t.Fatalf("snapshot %v: %v, tail %+v", fromSnapshot, err, tail)
		}
		if f := u.Files[0]; f.Offset != sealedTail.Segment.Size || f.First != sealedTail.Seq+1 || f.Members != 1 {
			t.Fatalf("snapshot %v: %+v", fromSnapshot, f)
		}
		if got.Approvals["deploy"].Status != "pending" || got.Events != st.Events {
			t.Fatalf("snapshot %v: the writer's approval was applied: %+v", fromSnapshot, got.Approvals["deploy"])
		}
	}
	u := new(ledger.UnsealedError)
	_, _, err = Replay(store, now)
	errors.As(err, &u)
	if _, err := ledger.Quarantine(store.Root(), u, ledger.QuarantineDir+"/test"); err != nil {
		t.Fatal(err)
	}
	if _, tail, err := Replay(store, now); err != nil || tail != sealedTail {
		t.Fatalf("after quarantine: %v", err)
	}
}

// TestReplayUndoesWhatABadSealCovered: the newest seal is checked last;
// when it does not verify, what it claimed to cover was applied, and the
// state is built again from what the last valid seal covers.
func TestReplayUndoesWhatABadSealCovered(t *testing.T) {
	keys := testKeys(t)
	store, now := sealedMonth(t, keys)
	st, sealedTail, err := Replay(store, now)
	if err != nil {
		t.Fatal(err)
	}
	good := keys.Ledger()
	wrong := &ledger.Seals{Sign: func(file, _ string) ([]byte, error) { return good.Sign(file, "another line") }}
	forged := &ledger.Event{TS: now, Event: ledger.ApprovalApproved, ScheduleID: "deploy", Status: ledger.StatusApproved, By: "mallory"}
	if _, err := ledger.Open(store.Root(), 0).Sealed(wrong).Append(sealedTail, sealedTail.Segment, []*ledger.Event{forged}); err != nil {
		t.Fatal(err)
	}
	for _, fromSnapshot := range []bool{true, false} {
		if !fromSnapshot {
			os.Remove(filepath.Join(store.Root(), SnapshotPath))
		}
		got, tail, err := Replay(store, now)
		var u *ledger.UnsealedError
		if !errors.As(err, &u) || u.Applied || tail != sealedTail || !strings.Contains(u.Reason, "does not verify") {
			t.Fatalf("snapshot %v: %v, tail %+v", fromSnapshot, err, tail)
		}
		if got.Approvals["deploy"].Status != "pending" || got.Events != st.Events {
			t.Fatalf("snapshot %v: the forged approval stayed applied: %+v", fromSnapshot, got.Approvals["deploy"])
		}
	}
}
