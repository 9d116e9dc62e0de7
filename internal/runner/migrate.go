package runner

import (
	"context"
	"fmt"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/model"
)

// MayMigrate says whether id may move the ledger (the migrate
// permission). A refusal is returned, not recorded: the ledger is about
// to move, and the branch it is on may refuse astra's pushes.
func (r *Runner) MayMigrate(ctx context.Context, target string, id identity.Identity) error {
	d := r.authorize(ctx, model.VerbMigrate, id, nil)
	switch {
	case d.Allowed:
		return nil
	case d.Undecided():
		return fmt.Errorf("%w; nothing was moved", d.Err)
	}
	return errkind.Refusedf("%s may not move %s: %s; nothing was moved", id, target, d.Reason)
}
