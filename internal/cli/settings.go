package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/spf13/viper"
)

// settings are the keys .astra.yaml may hold; each is also read from
// ASTRA_<KEY> with dots as underscores (ledger.segment_size ->
// ASTRA_LEDGER_SEGMENT_SIZE). Flags win over env, env over the file.
var settings = []struct {
	key, doc string
	def      any
}{
	{"ledger.segment_size", "bytes at which a ledger month rolls over to a new segment file", 4 << 20},
	{"ledger.output_tail", "bytes of each tool's output kept (redacted) in the ledger", 1024},
	{"ledger_branch", "branch the ledger is committed to (default: the checked-out branch; set it when main is protected)", ""},
	{"git.remote", "remote astra pushes to", "origin"},
	{"git.push", "push after committing (false: commit locally only, like --no-push)", true},
	{"git.timeout", "longest one call to the git remote may take before it is retried", "2m"},
	{"git.budget", "time a run may spend on the git remote in all, retries and their waits included; then it stops (exit 3), its events kept", "5m"},
	{"git.author_name", "author and committer of astra's commits", "github-actions[bot]"},
	{"git.author_email", "their email", "41898282+github-actions[bot]@users.noreply.github.com"},
	{"github.approvals", "open approval pull requests when GITHUB_TOKEN and GITHUB_REPOSITORY are set (false: local token files only)", true},
	{"run.limit", "candidates processed per run (--limit)", 10},
	{"run.max_parallel", "tasks run at once", 1},
	{"heartbeat.url_env", "environment variable holding the dead-man switch's ping URL (Healthchecks.io, Cronitor): run-due pings <url>/start, <url> or <url>/fail; unset or empty: no pings", "ASTRA_HEARTBEAT_URL"},
	{"heartbeat.timeout", "longest one heartbeat ping may take; a ping that fails is a warning, never the run's failure", "10s"},
}

func settingKeys() []string {
	keys := make([]string, len(settings))
	for i, s := range settings {
		keys[i] = s.key
	}
	return keys
}

func setDefaults(v *viper.Viper) {
	for _, s := range settings {
		v.SetDefault(s.key, s.def)
	}
}

// checkSettingKeys catches typos in .astra.yaml, which viper would ignore.
func checkSettingKeys(v *viper.Viper, file string) error {
	known := settingKeys()
	var bad []string
	for _, k := range v.AllKeys() {
		if !slices.Contains(known, k) && !slices.Contains([]string{"repo", "config", "json", "verbose"}, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return errkind.Usagef("%s: unknown setting(s) %s; known settings: %s", file, strings.Join(bad, ", "), strings.Join(known, ", "))
	}
	return nil
}

// settingsHelp documents the settings for `astra --help`-style listings.
func settingsHelp() string {
	var b strings.Builder
	for _, s := range settings {
		def := ""
		if s.def != "" {
			def = fmt.Sprintf(" (default %v)", s.def)
		}
		fmt.Fprintf(&b, "  %-24s %s%s\n", s.key, s.doc, def)
	}
	return b.String()
}

// settingBounds keep numeric settings where the ledger can hold them: a
// tool's output tail well inside one ledger line.
var settingBounds = []struct {
	key      string
	min, max int64
}{
	{"ledger.output_tail", 0, 1 << 20},
	{"ledger.segment_size", 64 << 10, 1 << 30},
}

// envName is an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// durationSettings are durations ("90s", "5m") that must be positive.
var durationSettings = []string{"git.timeout", "git.budget", "heartbeat.timeout"}

func checkSettingBounds(v *viper.Viper) error {
	for _, k := range durationSettings {
		if d, err := time.ParseDuration(strings.TrimSpace(fmt.Sprint(v.Get(k)))); err != nil || d <= 0 {
			return errkind.Usagef("setting %s: %v is not a positive duration (such as 90s or 5m)", k, v.Get(k))
		}
	}
	if name := v.GetString("heartbeat.url_env"); name != "" && !envName.MatchString(name) {
		return errkind.Usagef("setting heartbeat.url_env: %q is not an environment variable name (such as ASTRA_HEARTBEAT_URL); it names the variable holding the URL, never the URL", name)
	}
	for _, b := range settingBounds {
		n, err := strconv.ParseInt(strings.TrimSpace(fmt.Sprint(v.Get(b.key))), 10, 64)
		if err != nil {
			return errkind.Usagef("setting %s: %v is not a number", b.key, v.Get(b.key))
		}
		if n < b.min || n > b.max {
			return errkind.Usagef("setting %s is %d; it must be between %d and %d", b.key, n, b.min, b.max)
		}
	}
	return nil
}
