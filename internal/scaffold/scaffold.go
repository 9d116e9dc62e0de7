// Package scaffold writes a working astra setup into a repository
// (`astra init`): example schedules and policies that validate, the cron
// and validate-on-PR workflows, CODEOWNERS entries and the .gitattributes
// line that makes ledger diffs readable.
package scaffold

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/astra-gitops/astra/internal/buildinfo"
)

//go:embed all:files
var files embed.FS

// fanOutWorkflow replaces the cron workflow with --fan-out: a plan job,
// then a matrix of one job per claimed task.
//
//go:embed fanout/astra.yml
var fanOutWorkflow []byte

// cronWorkflow is the scaffold file fanOutWorkflow replaces.
const cronWorkflow = ".github/workflows/astra.yml"

// Result says what Init did to each file.
type Result struct {
	Created   []string `json:"created"`
	Replaced  []string `json:"replaced"`
	Appended  []string `json:"appended"`
	Unchanged []string `json:"unchanged"`
	Conflicts []string `json:"conflicts"` // exist with other content; rerun with --force
	// Kept are files the user changed that --force leaves as they are;
	// astra's version of each is written beside it as <file>.new.
	Kept    []string `json:"kept"`
	Skipped []string `json:"skipped"` // examples left out: the repository has its own configuration
}

// Options tune Init.
type Options struct {
	Force  bool   // replace files that exist with other content
	Owner  string // CODEOWNERS owner such as @my-org/maintainers; "" leaves the lines commented
	DryRun bool   // report only
	FanOut bool   // the cron workflow fans due work out to a job matrix (astra plan, astra run --claim)
	// ActionVersion is the ref the workflows pin the astra action to
	// (uses: astra-gitops/astra@<ref>); "" means ActionRef(buildinfo.Version()).
	ActionVersion string
	// Approver is the GitHub login of who may approve. With one, Init adds
	// the approval example (approvalFiles); without, it leaves it out, as
	// validate refuses a schedule nobody may approve.
	Approver string
	// Email is the approver's git user.email, mapped to Approver under
	// identities: so that they can reject and run locally; "" leaves it out.
	Email string
	// SigningKey is the approver's SSH public key ("ssh-ed25519 AAAA..."),
	// listed for Approver under signing_keys: so that `astra approve` signs
	// with it; "" leaves a commented example.
	SigningKey string
	// LedgerKey is the public half of the ledger key ("ssh-ed25519 AAAA...
	// comment"), listed in TrustFile; "" when the policies name one already.
	LedgerKey string
	// Environment is the GitHub environment the workflows' jobs take the
	// ledger key from (trust.environment); "" is model's default, astra.
	Environment string
	// Check validates the setup init is about to write before anything is
	// written: after is it staged in a directory of its own (the
	// repository's schedules/ and policies/ with init's files over them),
	// before the same copies without init's files, so the two miss the
	// same files the configuration names elsewhere in the repository (a
	// calendar, an input schema). nil checks nothing.
	Check func(before, after string) error
}

// NewSuffix is what --force appends to the name of a file the user
// changed, for astra's version written beside it.
const NewSuffix = ".new"

// TrustFile is where Init lists a new ledger key.
const TrustFile = "policies/trust.yaml"

// trustFile lists the ledger key in the policies.
func (o Options) trustFile() []byte {
	return []byte(`# yaml-language-server: $schema=https://raw.githubusercontent.com/astra-gitops/astra/main/schema/policies.schema.json
# The ledger key: astra seals what it records with the private half, which
# only the default branch's cron job holds (the secret ASTRA_LEDGER_KEY of
# the GitHub environment below, restricted to the default branch); every
# run verifies the seals with the public half listed here. To rotate, list
# the new key first: older keys still verify what they sealed.
trust:
  ledger_keys:
    - ` + o.LedgerKey + `
  environment: ` + o.environment() + `
  # Until ` + "`astra doctor`" + ` passes, tier-2 (external) tools do not run. To run
  # them anyway, say why here (recorded on every run), and remove it once
  # astra doctor passes:
  # accept_risk: trying astra out before the repository is set up
`)
}

func (o Options) environment() string {
	if o.Environment == "" {
		return "astra"
	}
	return o.Environment
}

// approvalFiles are the approval example: who approves, an external tool,
// and a schedule that needs an approval for every run.
var approvalFiles = []string{"policies/approvals.yaml", "schedules/approval-example.yaml", "scripts/tools/announce.sh"}

// loginRE is a GitHub login (or an @org/team slug).
var loginRE = regexp.MustCompile(`^(@[A-Za-z0-9-]+/)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)

// IsTeam reports whether approver is an @org/team rather than a login.
func IsTeam(approver string) bool { return strings.HasPrefix(approver, "@") }

// noreplyRE is GitHub's noreply commit email, which names the login.
var noreplyRE = regexp.MustCompile(`^(?:[0-9]+\+)?([A-Za-z0-9-]+)@users\.noreply\.github\.com$`)

// LoginFromEmail is the GitHub login a noreply commit email names, or "".
func LoginFromEmail(email string) string {
	if m := noreplyRE.FindStringSubmatch(email); m != nil {
		return m[1]
	}
	return ""
}

// fill puts the approver into the approval example's templates, quoted:
// YAML reads a bare @acme/leads as an error. An email maps to a person's
// login, never to a team, and only a person has a signing key: with a team,
// both are left as commented examples.
func (o Options) fill(data []byte) []byte {
	login := o.Approver
	if IsTeam(login) {
		login = "your-github-login"
	}
	ids := "# identities:            # your git config user.email -> your GitHub login, for commands run locally\n#   you@example.com: " + login
	if o.Email != "" && !IsTeam(o.Approver) {
		ids = "identities:              # git config user.email -> GitHub login, for commands run locally\n  " + strconv.Quote(o.Email) + ": " + strconv.Quote(o.Approver)
	}
	keys := "# signing_keys:          # your SSH public key, so that `astra approve` can sign your approvals\n#   " + login + ": [\"ssh-ed25519 AAAA...\"]"
	if o.SigningKey != "" && !IsTeam(o.Approver) {
		keys = "signing_keys:            # SSH public keys `astra approve` signs approvals with\n  " + strconv.Quote(o.Approver) + ": [" + strconv.Quote(o.SigningKey) + "]"
	}
	data = bytes.ReplaceAll(data, []byte("{{approver}}"), []byte(strconv.Quote(o.Approver)))
	data = bytes.ReplaceAll(data, []byte("{{signing_keys}}"), []byte(keys))
	return bytes.ReplaceAll(data, []byte("{{identities}}"), []byte(ids))
}

// versionPlaceholder stands for the action's ref in the workflow
// templates, environmentPlaceholder for the ledger key's environment.
const (
	versionPlaceholder     = "{{version}}"
	environmentPlaceholder = "{{environment}}"
)

// ActionRef is the ref of the astra action that workflows written by a build
// of version v pin: v itself when it is a release, so a repository runs the
// astra that set it up; otherwise (a build from source) the main branch,
// which the action builds from source on every run until a release is pinned.
func ActionRef(v string) string {
	if buildinfo.IsRelease(v) {
		return v
	}
	return "main"
}

// Files lists the scaffold's files (slash paths), for documentation and tests.
func Files() []string {
	var out []string
	_ = fs.WalkDir(files, "files", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, "files/"))
		}
		return err
	})
	return out
}

// Init writes the scaffold under root. Existing files with other content
// are left alone (listed as conflicts, and nothing at all is written) unless
// opts.Force; CODEOWNERS and .gitattributes are appended to, never replaced.
func Init(root string, opts Options) (Result, error) {
	var r Result
	if opts.Approver != "" && !loginRE.MatchString(opts.Approver) {
		return r, fmt.Errorf("--approver %q is not a GitHub login or @org/team", opts.Approver)
	}
	writes, err := r.planFiles(root, opts)
	if err != nil {
		return r, err
	}
	appended, err := r.planAppends(root, opts.Owner)
	if err != nil {
		return r, err
	}
	if len(r.Conflicts) > 0 {
		return r, nil
	}
	writes = append(writes, appended...)
	if opts.Check != nil {
		if err := check(root, writes, opts.Check); err != nil {
			return r, err
		}
	}
	if opts.DryRun {
		return r, nil
	}
	return r, writeAll(root, writes)
}

// check stages the configuration init would leave (the repository's
// schedules/ and policies/, init's files over them) and the one there is
// now, each in a directory of its own, and runs fn on them: a setup that
// does not validate is never written.
func check(root string, writes []write, fn func(before, after string) error) error {
	var copies []write
	for _, dir := range []string{"schedules", "policies"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil // what is missing or not a regular file, validate names in the repository itself
			}
			rel, _ := filepath.Rel(root, p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			copies = append(copies, write{filepath.ToSlash(rel), data, 0o644})
			return nil
		})
		if err != nil {
			return err
		}
	}
	var staged [2]string
	for i, files := range [][]write{copies, append(copies, writes...)} {
		dir, err := os.MkdirTemp("", "astra-init-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := writeAll(dir, files); err != nil {
			return err
		}
		staged[i] = dir
	}
	return fn(staged[0], staged[1])
}

// write is one file Init writes.
type write struct {
	rel  string
	data []byte
	mode fs.FileMode
}

// planFiles decides what becomes of each scaffold file, noting it in r,
// and returns the files to write.
func (r *Result) planFiles(root string, opts Options) ([]write, error) {
	own := hasOwnConfig(root)
	ref := opts.ActionVersion
	if ref == "" {
		ref = ActionRef(buildinfo.Version())
	}
	var writes []write
	for _, rel := range Files() {
		example := slices.Contains(approvalFiles, rel)
		if example && opts.Approver == "" {
			continue // the CLI says how to add it
		}
		if own && !strings.HasPrefix(rel, ".github/") {
			r.Skipped = append(r.Skipped, rel)
			continue
		}
		w, err := scaffoldFile(rel, opts, ref, example)
		if err != nil {
			return nil, err
		}
		if writes, err = r.plan(writes, root, w, opts.Force); err != nil {
			return nil, err
		}
	}
	if opts.LedgerKey != "" {
		return r.plan(writes, root, write{TrustFile, opts.trustFile(), 0o644}, opts.Force)
	}
	return writes, nil
}

// scaffoldFile is the content of scaffold file rel: the fan-out workflow
// in place of the cron one, the action pinned to ref, the approver filled
// into the approval example.
func scaffoldFile(rel string, opts Options, ref string, example bool) (write, error) {
	data, err := files.ReadFile("files/" + rel)
	if err != nil {
		return write{}, err
	}
	if opts.FanOut && rel == cronWorkflow {
		data = fanOutWorkflow
	}
	data = bytes.ReplaceAll(data, []byte(versionPlaceholder), []byte(ref))
	data = bytes.ReplaceAll(data, []byte(environmentPlaceholder), []byte(opts.environment()))
	if example {
		data = opts.fill(data)
	}
	mode := fs.FileMode(0o644)
	if strings.HasSuffix(rel, ".sh") {
		mode = 0o755
	}
	return write{rel, data, mode}, nil
}

// planAppends adds astra's lines to CODEOWNERS and .gitattributes unless
// they are there already, noting each in r.
func (r *Result) planAppends(root, owner string) ([]write, error) {
	var writes []write
	for _, a := range appends(owner) {
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(a.rel)))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		if bytes.Contains(old, []byte(a.marker)) {
			r.Unchanged = append(r.Unchanged, a.rel)
			continue
		}
		data := old
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		data = append(data, a.text...)
		if len(old) == 0 {
			r.Created = append(r.Created, a.rel)
		} else {
			r.Appended = append(r.Appended, a.rel)
		}
		writes = append(writes, write{a.rel, data, 0o644})
	}
	return writes, nil
}

func writeAll(root string, writes []write) error {
	for _, w := range writes {
		p := filepath.Join(root, filepath.FromSlash(w.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, w.data, w.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, w.mode); err != nil {
			return err
		}
	}
	return nil
}

// plan notes what becomes of w (created, unchanged, replaced or kept with
// force, else a conflict) and adds it to writes when it is to be written.
func (r *Result) plan(writes []write, root string, w write, force bool) ([]write, error) {
	old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(w.rel)))
	switch {
	case os.IsNotExist(err):
		r.Created = append(r.Created, w.rel)
	case err != nil:
		return nil, err
	case bytes.Equal(old, w.data):
		r.Unchanged = append(r.Unchanged, w.rel)
		return writes, nil
	case force && astraOwned(w.rel, old):
		r.Replaced = append(r.Replaced, w.rel)
	case force:
		// The user changed it: theirs stays, astra's goes beside it.
		r.Kept = append(r.Kept, w.rel)
		w.rel += NewSuffix
	default:
		r.Conflicts = append(r.Conflicts, w.rel)
		return writes, nil
	}
	return append(writes, w), nil
}

// refRE is the astra action's pin in a workflow: workflows that differ
// only there are the same.
var refRE = regexp.MustCompile(`astra-gitops/astra@\S+`)

// astraOwned reports whether old, the content of scaffold file rel in the
// repository, is one astra wrote and the user did not change: a rendering
// of rel by this astra (the cron or the fan-out workflow, any action pin;
// an older template differs and is kept as the user's). Only such a file
// --force replaces.
func astraOwned(rel string, old []byte) bool {
	var variants [][]byte
	if data, err := files.ReadFile("files/" + rel); err == nil {
		variants = append(variants, data)
	}
	if rel == cronWorkflow {
		variants = append(variants, fanOutWorkflow)
	}
	norm := func(b []byte) []byte { return refRE.ReplaceAll(b, []byte("astra-gitops/astra@"+versionPlaceholder)) }
	for _, v := range variants {
		// The templates' other placeholder, the environment, is matched
		// as a pattern: any environment name.
		pat := regexp.QuoteMeta(string(norm(v)))
		pat = strings.ReplaceAll(pat, regexp.QuoteMeta(environmentPlaceholder), `[A-Za-z0-9_.-]+`)
		if regexp.MustCompile(`^` + pat + `$`).Match(norm(old)) {
			return true
		}
	}
	return false
}

// hasOwnConfig reports whether root already has schedules or policies other
// than the scaffold's: then the examples would only collide with them.
func hasOwnConfig(root string) bool {
	for _, dir := range []string{"schedules", "policies"} {
		found := false
		_ = filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			ext := filepath.Ext(p)
			if (ext == ".yaml" || ext == ".yml") && !slices.Contains(Files(), filepath.ToSlash(rel)) && filepath.ToSlash(rel) != TrustFile {
				found = true
				return fs.SkipAll
			}
			return nil
		})
		if found {
			return true
		}
	}
	return false
}

type appendix struct{ rel, marker, text string }

// ownedPaths are what CODEOWNERS gives an owner: everything that decides
// what runs, as whom, and who may decide it (the state snapshot included:
// runs start from it).
var ownedPaths = []string{"/.astra.yaml", "/.github/", "/policies/", "/schedules/", "/scripts/tools/", "/var/approvals/", "/var/state/"}

// appends are the lines added to files a repository may already have.
func appends(owner string) []appendix {
	codeowners := "# astra: schedules, policies, approvals and tool scripts decide what runs unattended and as whom.\n" +
		"# A code owner must review changes to them once branch protection requires it (see astra's README).\n"
	line := "%s %s\n"
	if owner == "" {
		codeowners += "# Set an owner (astra init --owner @my-org/maintainers) and uncomment:\n"
		line, owner = "# %s %s\n", "@OWNER"
	}
	for _, p := range ownedPaths {
		codeowners += fmt.Sprintf(line, p, owner)
	}
	return []appendix{
		{rel: path.Join(".github", "CODEOWNERS"), marker: "# astra: schedules, policies", text: codeowners},
		{rel: ".gitattributes", marker: "diff=astra-ledger", text: "# astra: show ledger changes as text in git diff (git config diff.astra-ledger.textconv \"astra ledger cat\")\n" +
			"var/**/*.ndjson.gz diff=astra-ledger\n"},
	}
}
