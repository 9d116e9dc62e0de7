// Package cli wires astra's commands. Commands stay thin: parse flags, call
// a package, print.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/astra-gitops/astra/internal/buildinfo"
	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/ledgerkey"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/repofs"
	"github.com/astra-gitops/astra/internal/telemetry"
	"github.com/astra-gitops/astra/internal/ui"
)

// app is the state shared by commands of one invocation.
type app struct {
	started time.Time // by the wall clock, never --now: compared with file times
	v       *viper.Viper
	stdin   io.Reader
	stdout  io.Writer           // through the ui funnel: cleaned of control characters
	stderr  io.Writer           // likewise
	status  *ui.Writer          // stderr's: where progress is drawn on a terminal
	tty     bool                // stdout is a terminal
	errTTY  bool                // stderr is a terminal
	environ []string            // the environment, "NAME=value"
	getenv  func(string) string // a variable of environ, "" when unset
	cfg     *model.Config       // the configuration of the run, once loaded
	// keys are the ledger keys, loaded once (keys.go).
	keys       *ledgerkey.Keys
	keysErr    error
	keysLoaded bool
	tracer     *telemetry.Tracer
	// nowFlag is --now and testClock --test-clock: flags only, never a
	// setting or a variable, so no file or environment moves the clock
	// of a run that records (clock.go).
	nowFlag   string
	testClock bool
	// limit is a list command's --limit: at most this many rows (0: all).
	limit int
}

// newApp is the state of one invocation. Everything astra prints goes
// through ui.Writers: what a tool, a name or GitHub said cannot drive the
// terminal, nor, under GitHub Actions, command the runner; colour passes
// only to a terminal, and not under NO_COLOR.
func newApp(stdin io.Reader, stdout, stderr io.Writer, environ []string) *app {
	a := &app{v: viper.New(), stdin: stdin, environ: environ, getenv: lookup(environ), started: time.Now(), tty: isTerminal(stdout),
		errTTY: isTerminal(stderr)}
	out := ui.NewWriter(stdout, a.tty && a.getenv("NO_COLOR") == "")
	a.status = ui.NewWriter(stderr, false)
	a.status.SetLive(a.errTTY)
	out.SetActions(a.inGitHubActions())
	a.status.SetActions(a.inGitHubActions())
	a.stdout, a.stderr = out, a.status
	return a
}

// lookup reads a variable of environ; of two with one name, the last
// counts (as for os/exec).
func lookup(environ []string) func(string) string {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if name, val, ok := strings.Cut(kv, "="); ok {
			vars[name] = val
		}
	}
	return func(name string) string { return vars[name] }
}

// Execute runs astra with args in the environment environ ("NAME=value")
// and returns the process exit code.
func Execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	a := newApp(stdin, stdout, stderr, environ)
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		printError(a.stderr, err)
	}
	if err := a.tracer.Shutdown(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(a.stderr, "astra: warning: %v\n", err) // tracing never fails a run
	}
	return exitCode(ctx, err)
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "astra",
		Short: "GitOps batch runner for autonomous work",
		Long: `astra runs the schedules in schedules/ under the policies in policies/,
keeps all state in a hash-chained ledger under var/ committed to the same
repository, and turns approvals into pull requests.

Run it from CI cron with 'astra run-due'; run 'astra run-due --dry-run'
locally to see what the next run would do.

Settings (.astra.yaml at the repository root, or ASTRA_<KEY> env vars):
` + settingsHelp(),
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           buildinfo.String(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.loadSettings(cmd) },
	}
	root.SetVersionTemplate("astra {{.Version}}\n")
	f := root.PersistentFlags()
	f.String("repo", "", "repository root (default: the git top-level of the working directory)")
	f.String("config", "", "settings file (default: <repo>/.astra.yaml when present)")
	f.Bool("json", false, "print machine-readable JSON")
	f.BoolP("verbose", "v", false, "print more detail")
	f.StringVar(&a.nowFlag, "now", "", "pretend the current time is this RFC3339 instant: what-if answers and dry runs (a run that records needs --test-clock too)")
	f.BoolVar(&a.testClock, "test-clock", false, "let a run that records take its time from --now, for tests: every event it writes says \"clock\":\"test\"")
	for _, name := range []string{"repo", "config", "json", "verbose"} {
		_ = a.v.BindPFlag(name, f.Lookup(name))
	}
	root.AddCommand(
		a.versionCmd(),
		a.validateCmd(),
		a.schedulesCmd(),
		a.runDueCmd(),
		a.runCmd(),
		a.backfillCmd(),
		a.planCmd(),
		a.approvalsCmd(),
		a.approveCmd("approve"),
		a.tasksCmd(),
		a.budgetCmd(),
		a.statusCmd(),
		a.deadLetterCmd(),
		a.ledgerCmd(),
		a.reportCmd(),
		a.triggerCmd(),
		a.rollbackCmd(),
		a.memoryCmd(),
		a.initCmd(),
		a.doctorCmd(),
		a.trustCmd(),
		a.pauseCmd(true),
		a.pauseCmd(false),
		a.cancelCmd(),
	)
	root.InitDefaultCompletionCmd()
	rejectUnknownSubcommands(root)
	return root
}

// rejectUnknownSubcommands makes every command group fail on a word that
// names none of its subcommands, with cobra's suggestion, as git and gh
// do: left to cobra, a group that only holds subcommands prints its help
// and exits 0, so a mistyped `astra ledger verfy` in CI looked like
// success. Without arguments a group does what it did (its help, or its
// own listing, as `astra budget`).
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() {
		return
	}
	own := c.Args
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 || own != nil && own(cmd, args) == nil {
			return nil
		}
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return errkind.WithHint(errkind.Usagef("%s", msg), fmt.Sprintf("Run '%s --help' for its commands.", cmd.CommandPath()))
	}
	if !c.Runnable() {
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
}

// loadSettings layers flags over ASTRA_* env over .astra.yaml over defaults.
func (a *app) loadSettings(cmd *cobra.Command) error {
	v := a.v
	v.SetEnvPrefix("ASTRA")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_", "-", "_"))
	for _, k := range settingKeys() {
		_ = v.BindEnv(k)
	}
	for _, k := range []string{"repo", "config", "json", "verbose"} {
		_ = v.BindEnv(k)
	}
	if err := a.checkNowFlag(); err != nil {
		return err
	}
	setDefaults(v)
	repo := v.GetString("repo")
	if repo == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		repo = gitTopLevel(wd)
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return errkind.Usagef("--repo %s is not a directory", repo)
	}
	v.Set("repo", abs)
	cfgFile := v.GetString("config")
	var data []byte
	if cfgFile != "" {
		// A file the user names is theirs to choose.
		if data, err = os.ReadFile(cfgFile); err != nil {
			return errkind.Usagef("--config %s: %w", cfgFile, err)
		}
	} else {
		// The repository's own settings are repository content: a regular
		// file inside it, of bounded size, like schedules and policies.
		cfgFile = filepath.Join(abs, ".astra.yaml")
		data, err = repofs.ReadFile(abs, ".astra.yaml", model.MaxFileBytes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			data = nil
		case err != nil:
			return errkind.Usagef("%w", err)
		}
	}
	if data != nil {
		if err := refuseNowSetting(cfgFile, data); err != nil {
			return err
		}
		v.SetConfigType("yaml")
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return errkind.Usagef("%s: %w", cfgFile, err)
		}
		if err := checkSettingKeys(v, cfgFile); err != nil {
			return err
		}
	}
	return checkSettingBounds(v)
}

// gitTopLevel walks up from dir to the directory holding .git; without one
// it returns dir, so astra also works on a plain directory.
func gitTopLevel(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

func (a *app) repo() string { return a.v.GetString("repo") }
func (a *app) json() bool   { return a.v.GetBool("json") }

func (a *app) verbose() bool { return a.v.GetBool("verbose") }

func (a *app) inGitHubActions() bool { return a.getenv("GITHUB_ACTIONS") == "true" }

// printRows is how list commands print: JSON with --json (an empty list as
// []), else none when there is nothing (if set), else a table under header
// with row's line (or lines, or none when "") for each element.
func printRows[T any](a *app, rows []T, none, header string, row func(T) string) error {
	rows = firstN(rows, a.limit)
	if a.json() {
		return a.printJSON(nonNil(rows))
	}
	if len(rows) == 0 && none != "" {
		fmt.Fprintln(a.stdout, none)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		if line := row(r); line != "" {
			fmt.Fprintln(tw, line)
		}
	}
	return tw.Flush()
}

// limitFlag gives a list command --limit, which printRows honours.
func (a *app) limitFlag(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().IntVar(&a.limit, "limit", 0, "show at most N rows (0: all)")
	return cmd
}

// firstN is rows cut to n elements; n <= 0 keeps them all.
func firstN[T any](rows []T, n int) []T {
	if n > 0 && len(rows) > n {
		return rows[:n]
	}
	return rows
}

// tenantFlag gives cmd --tenant into p, with the old spelling --tenant-id
// kept working: hidden, and noting on stderr (once) that it is deprecated.
func (a *app) tenantFlag(cmd *cobra.Command, p *string, usage string) {
	cmd.Flags().StringVar(p, "tenant", "", usage)
	cmd.Flags().Var(&oldSpelling{p: p, note: func() { fmt.Fprintln(a.stderr, "astra: warning: --tenant-id is deprecated; use --tenant") }}, "tenant-id", usage)
	_ = cmd.Flags().MarkHidden("tenant-id")
}

// oldSpelling is a string flag kept under an old name: it sets what the
// new one does and calls note the first time it is used.
type oldSpelling struct {
	p     *string
	note  func()
	noted bool
}

func (o *oldSpelling) String() string { return *o.p }
func (o *oldSpelling) Type() string   { return "string" }
func (o *oldSpelling) Set(v string) error {
	if !o.noted {
		o.noted = true
		o.note()
	}
	*o.p = v
	return nil
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
