package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
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

// decision is the flags of a person's recorded decision (pause, cancel,
// trust resume, correct-clock): why, recorded and required; who; and
// whether it is recorded and pushed.
type decision struct {
	reason string
	by     string
	run    runFlags
}

// addFlags adds --reason, --dry-run, --no-push and --by.
func (d *decision) addFlags(cmd *cobra.Command, reasonHelp, dryRunHelp string) {
	f := cmd.Flags()
	f.StringVar(&d.reason, "reason", "", reasonHelp)
	f.BoolVar(&d.run.dryRun, "dry-run", false, dryRunHelp)
	f.BoolVar(&d.run.noPush, "no-push", false, "commit locally, do not push")
	byFlag(cmd, &d.by)
	_ = cmd.MarkFlagRequired("reason")
}

// decide refuses an empty reason (why says what it should say) and
// starts the decision (see recorder).
func (a *app) decide(ctx context.Context, d decision, verb, target, why string) (*runner.Runner, identity.Identity, error) {
	if strings.TrimSpace(d.reason) == "" {
		return nil, identity.Identity{}, errkind.Usagef("--reason is empty: say %s, it is recorded", why)
	}
	return a.recorder(ctx, d.run, verb, target, d.by)
}
