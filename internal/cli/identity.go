package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/gitops"
	"github.com/astra-gitops/astra/internal/identity"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/runner"
)

// byFlag is --by on every command a person takes: who they say they are.
// In CI GitHub says who acts and --by must agree; locally git config
// user.email, mapped under identities: in policies, says so, and --by is
// only an unverified claim in a dry run or with --no-push.
func byFlag(cmd *cobra.Command, by *string) {
	cmd.Flags().StringVar(by, "by", "", "who acts (checked: GitHub's actor in CI, your mapped git email locally; a free claim only with --dry-run or --no-push)")
}

// who establishes the identity acting for verb on target. An identity
// that cannot be established is refused, and the refusal recorded.
func (a *app) who(ctx context.Context, r *runner.Runner, cfg *model.Config, verb, target, by string, f runFlags) (identity.Identity, error) {
	id, err := identity.Resolve(a.person(cfg, by, f))
	if err != nil {
		return id, r.Refuse(ctx, verb, target, id, err.Error(), cfg.Schedule(target))
	}
	return id, nil
}

// person is what identity.Resolve looks at to say who runs this command.
func (a *app) person(cfg *model.Config, by string, f runFlags) identity.Env {
	return identity.Env{
		Getenv:     a.getenv,
		GitEmail:   func() (string, error) { return gitops.UserEmail(a.repo()) },
		Identities: cfg.Policies.Identities,
		By:         by,
		Unverified: f.dryRun || f.noPush,
	}
}

// recorder is what a person's recorded decision starts from: the
// configuration, a runner of one task and who is acting, for verb on
// target (a refusal of who is recorded, as who does).
func (a *app) recorder(ctx context.Context, f runFlags, verb, target, by string) (*runner.Runner, identity.Identity, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, identity.Identity{}, err
	}
	r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
	if err != nil {
		return nil, identity.Identity{}, err
	}
	id, err := a.who(ctx, r, cfg, verb, target, by, f)
	return r, id, err
}
