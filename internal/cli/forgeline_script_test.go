package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/astra-gitops/astra/internal/ledger"
)

// forgeline REPO JSON: append to REPO's ledger, as a writer without the
// ledger key can, one line chained onto its last one (the right seq and
// prev, in a gzip member of its own). The line is the newest
// approval.requested event's schedule, slot, key and trace, dated like
// the last line, with JSON's fields over them (@FILE: the JSON in FILE).
// Its detail is the request's (the action it approves), with JSON's
// detail fields over it.
func forgeLine(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: forgeline repo json")
	}
	root := ts.MkAbs(args[0])
	store := ledger.Open(root, 0)
	segs, err := store.Segments()
	ts.Check(err)
	var base ledger.Event
	tail, err := ledger.Scan(root, segs, ledger.ScanOptions{}, func(e *ledger.Event) error {
		if e.Event == ledger.ApprovalRequested {
			base = ledger.Event{ScheduleID: e.ScheduleID, Slot: e.Slot, IdempotencyKey: e.IdempotencyKey, TraceID: e.TraceID,
				Actor: e.Actor, Tool: e.Tool, Tier: e.Tier, Mode: e.Mode, Autonomy: e.Autonomy, Detail: e.Detail}
		}
		return nil
	})
	ts.Check(err)
	base.TS = tail.TS
	js := []byte(args[1])
	if name, ok := strings.CutPrefix(args[1], "@"); ok {
		js = []byte(ts.ReadFile(name))
	}
	detail := map[string]json.RawMessage{}
	if len(base.Detail) > 0 {
		ts.Check(json.Unmarshal(base.Detail, &detail))
	}
	var over struct {
		Detail map[string]json.RawMessage `json:"detail"`
	}
	ts.Check(json.Unmarshal(js, &over))
	ts.Check(json.Unmarshal(js, &base))
	for k, v := range over.Detail {
		detail[k] = v
	}
	base.Detail, err = json.Marshal(detail)
	ts.Check(err)
	lines, _, err := ledger.Lines(nil, tail, []*ledger.Event{&base})
	ts.Check(err)
	var member bytes.Buffer
	zw := gzip.NewWriter(&member)
	_, err = zw.Write(lines)
	ts.Check(err)
	ts.Check(zw.Close())
	f, err := os.OpenFile(filepath.Join(root, filepath.FromSlash(tail.Segment.Path)), os.O_APPEND|os.O_WRONLY, 0)
	ts.Check(err)
	_, err = f.Write(member.Bytes())
	ts.Check(err)
	ts.Check(f.Close())
}
