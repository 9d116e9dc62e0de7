package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/forge"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/posture"
	"github.com/astra-gitops/astra/internal/sandbox"
)

// sandboxCheck says whether the tool sandbox works on this machine (a
// variable so tests can simulate a machine without it).
var sandboxCheck = func() error {
	abi, ok := sandbox.Available()
	switch {
	case ok:
		return nil
	case abi > 0:
		return fmt.Errorf("the kernel has Landlock (ABI %d), but the sandbox is switched off (%s=off)", abi, sandbox.OffEnv)
	}
	return errors.New("the kernel has no Landlock (Linux 5.13 or later with the landlock LSM enabled): tools would run with the whole machine in reach")
}

// noTokenHint says how to give doctor a token.
const noTokenHint = "run with a token: GITHUB_TOKEN=$(gh auth token) GITHUB_REPOSITORY=owner/repo astra doctor"

// postureInput is what the posture checks read besides the checkout, for
// doctor and for the tier-2 gate of a run.
func (a *app) postureInput(cfg *model.Config, fc *forge.Client) posture.Input {
	in := posture.Input{Root: a.repo(), Policies: &cfg.Policies, Repository: a.getenv("GITHUB_REPOSITORY"),
		LedgerBranch: a.v.GetString("ledger_branch"), Key: a.postureKey(),
		Sandbox: sandboxCheck, ApprovalSecret: a.getenv("ASTRA_APPROVAL_SECRET") != ""}
	if fc != nil { // never a typed nil in the interface
		in.Forge = fc
	}
	return in
}

func (a *app) doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the repository's safety posture: what tier 2 relies on, and how to fix it",
		Long: `doctor checks what astra's guarantees rest on (docs/security.md): the
ledger key, the rulesets of the ledger branch and of the default branch,
CODEOWNERS, the workflows, the GitHub environment that holds the key, where
the key's secret lives, the default workflow permissions, the tool sandbox
and the approval secret. Each check prints what it found and, when it does
not pass, the command or setting that fixes it.

GitHub is read with GITHUB_TOKEN for GITHUB_REPOSITORY. Without them the
checks that need GitHub are unknown. A workflow's GITHUB_TOKEN cannot read
secrets, classic branch protection or the default workflow permissions; a
repository administrator's token can (GITHUB_TOKEN=$(gh auth token)).

Exit status 0 when every check tier 2 needs passes (a tier-2 run checks the
same before it is admitted, and is skipped with reason posture otherwise,
unless policies set trust.accept_risk), 1 when one does not, 3 when GitHub
did not answer.`,
		Example: `  GITHUB_TOKEN=$(gh auth token) GITHUB_REPOSITORY=octo/widgets astra doctor
  astra doctor --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			fc, err := a.forgeClient()
			if err != nil {
				return errkind.Usagef("%w", err)
			}
			return runDoctor(cmd.Context(), doctorOptions{in: a.postureInput(cfg, fc), json: a.json(), out: a.stdout, printJSON: a.printJSON})
		},
	}
}

// doctorOptions are what runDoctor needs.
type doctorOptions struct {
	in        posture.Input
	json      bool
	out       io.Writer
	printJSON func(any) error
}

// doctorJSON is doctor's --json output.
type doctorJSON struct {
	Tier2  bool            `json:"tier2"`
	Checks []posture.Check `json:"checks"`
}

// runDoctor checks the posture and prints it: a table, then what each
// check found and, when it does not pass, its fix.
func runDoctor(ctx context.Context, opts doctorOptions) error {
	checks, outage := posture.Run(ctx, opts.in)
	ok, failing := posture.Tier2(checks)
	if opts.json {
		if err := opts.printJSON(doctorJSON{Tier2: ok, Checks: checks}); err != nil {
			return err
		}
	} else {
		printDoctor(opts.out, checks, opts.in.Forge == nil)
		switch {
		case ok:
			fmt.Fprintln(opts.out, "\ntier 2 may run: every check it needs passes.")
		default:
			var names []string
			for _, c := range failing {
				names = append(names, c.Name)
			}
			fmt.Fprintf(opts.out, "\ntier 2 does not run: %s %s not pass (a tier-2 run is skipped with reason posture, unless policies set trust.accept_risk).\n",
				strings.Join(names, ", "), map[bool]string{true: "does", false: "do"}[len(names) == 1])
		}
	}
	switch {
	case outage != nil:
		return errkind.Infra(fmt.Errorf("GitHub did not answer every check: %w", outage))
	case !ok:
		return errkind.Failed()
	}
	return nil
}

func printDoctor(w io.Writer, checks []posture.Check, noForge bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tCHECK\tTIER 2\tWHAT")
	for _, c := range checks {
		need := ""
		if c.Tier2 {
			need = "needs it"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Status, c.Name, need, c.Title)
	}
	_ = tw.Flush()
	for _, c := range checks {
		fmt.Fprintf(w, "\n%s (%s)\n  found: %s\n", c.Name, c.Status, c.Found)
		if c.Fix != "" {
			fmt.Fprintf(w, "  fix:   %s\n", c.Fix)
		}
	}
	if noForge {
		fmt.Fprintf(w, "\nGitHub was not asked: %s\n", noTokenHint)
	}
}
