package cli

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/plan"
	"github.com/astra-gitops/astra/internal/state"
	"github.com/spf13/cobra"
)

func (a *app) deadLetterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dead-letter",
		Short: "List and release slots that failed every attempt",
		Example: `  astra dead-letter list
  astra dead-letter retry nightly_sync`,
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "Show dead-lettered slots",
		Example: `  astra dead-letter list
  astra dead-letter list --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.replay()
			if err != nil {
				return err
			}
			dls := make([]*state.DeadLetter, 0, len(st.DeadLetters))
			for _, d := range st.DeadLetters {
				dls = append(dls, d)
			}
			sort.Slice(dls, func(i, j int) bool { return dls[i].At.Before(dls[j].At) })
			return printRows(a, dls, "no dead letters", "KEY\tATTEMPTS\tSINCE\tERROR", func(d *state.DeadLetter) string {
				return fmt.Sprintf("%s\t%d\t%s\t%s", d.Key, d.Attempts, d.At.Format(time.RFC3339), truncate(d.Error, 100))
			})
		},
	}
	var by string
	var f runFlags
	retry := &cobra.Command{
		Use:   "retry <schedule|key|run>",
		Short: "Release dead letters: they run again at the next run-due (recorded)",
		Example: `  astra dead-letter retry autonomous_coding      # every dead letter of the schedule
  astra dead-letter retry 'sch_a2ebb623@2026-11-22T08:00:00Z'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			ref := strings.SplitN(args[0], "#", 2)[0] // a run id names its key
			if s := cfg.Schedule(ref); s != nil {
				ref = s.ID
			}
			r, err := a.newRunner(cfg, f, plan.Filter{}, 1)
			if err != nil {
				return err
			}
			id, err := a.who(cmd.Context(), r, cfg, model.VerbDeadLetterRetry, args[0], by, f)
			if err != nil {
				return err
			}
			rep, released, err := r.ReleaseDeadLetters(cmd.Context(), ref, id)
			if err == nil {
				fmt.Fprintf(a.stdout, "released %s; the next run-due retries them\n", strings.Join(released, ", "))
			}
			return a.finishRecord(rep, err)
		},
	}
	byFlag(retry, &by)
	retry.Flags().BoolVar(&f.noPush, "no-push", false, "commit locally, do not push")
	cmd.AddCommand(list, retry)
	return cmd
}
