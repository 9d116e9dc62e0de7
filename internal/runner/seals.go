package runner

import "github.com/astra-gitops/astra/internal/ledger"

// store is the ledger as this run reads and appends to it: sealed when
// the repository's ledger is (Options.Seals).
func (r *Runner) store() *ledger.Store {
	return ledger.Open(r.opts.Root, r.opts.SegmentSize).Sealed(r.opts.Seals)
}
