package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/ledger/ledgertest"
	"github.com/astra-gitops/astra/internal/model"
)

// In a sparse checkout (the newest ledger file only) the history tools
// answer from what is there and say what they cannot see.
func TestBuiltinsSayWhatASparseCheckoutLacks(t *testing.T) {
	root := t.TempDir()
	tail, err := ledgertest.Generate(root, ledgertest.Options{Schedules: 20, Events: 4000, SegmentSize: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	store := ledger.Open(root, 32<<10)
	run := Builtin(&model.Config{}, store, func() time.Time { return tail.TS })
	ctx := context.Background()
	for _, tool := range []string{model.BuiltinTasksList, model.BuiltinTasksLastFailed} {
		if out, err := run(ctx, tool, map[string]any{}); err != nil || strings.Contains(out, "note:") {
			t.Fatalf("%s over the whole ledger: %v\n%s", tool, err, out)
		}
	}
	segs, _ := store.Segments()
	for _, s := range segs[:len(segs)-1] {
		os.Remove(filepath.Join(root, s.Path))
	}
	for _, tool := range []string{model.BuiltinTasksList, model.BuiltinTasksLastFailed, model.BuiltinTasksByTrace} {
		out, err := run(ctx, tool, map[string]any{"trace_id": "x"})
		if err != nil || !strings.Contains(out, "note: runs before ") || !strings.Contains(out, "it holds the ledger from "+segs[len(segs)-1].Path) {
			t.Fatalf("%s in a sparse checkout: %v\n%s", tool, err, out)
		}
	}
	if out, _ := run(ctx, model.BuiltinTasksList, map[string]any{"since": tail.TS.Add(-time.Minute).Format(time.RFC3339)}); strings.Contains(out, "note:") {
		t.Fatalf("a question the checkout can answer: %s", out)
	}
}
