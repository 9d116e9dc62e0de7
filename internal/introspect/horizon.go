package introspect

import (
	"fmt"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
)

// Missing says what a question about runs since since cannot see in this
// checkout: "" when the ledger holds everything since then. A sparse
// checkout (what astra init's workflow makes) holds only the ledger files
// a run appends to; runs start from the state snapshot, but history before
// the oldest file here is not available to list.
func Missing(store *ledger.Store, since time.Time) string {
	segs, err := store.Segments()
	if err != nil || len(segs) == 0 {
		return ""
	}
	first, err := ledger.First(store.Root(), segs[0])
	if err != nil || first == nil || first.Seq == 1 || first.TS.Before(since) {
		return ""
	}
	return fmt.Sprintf("runs before %s are not in this checkout (it holds the ledger from %s on; check out var/schedules/ in full for the rest)",
		first.TS.Format(time.RFC3339), segs[0].Path)
}
