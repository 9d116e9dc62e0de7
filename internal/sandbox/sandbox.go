// Package sandbox starts tools where they cannot reach past their tier.
//
// A tool is started through astra itself: the executable is run again with
// a launch spec and the view's Landlock ruleset, made here
// (launch_linux.go), and that launcher (package launch), before it becomes
// the tool (execve, same process), sets no_new_privs (setuid programs such as
// sudo gain nothing), drops the capabilities that reach around a
// filesystem view (raw I/O, ptrace, mounts, file handles), makes the tool a
// child subreaper (what it starts stays in its process tree while it
// lives), and, where the kernel has Landlock, restricts it to a view:
//
//   - it reads everything but the repository's git configuration
//     (.git/config: a checkout's credentials) and astra's own git state
//     (.git/astra/: keys, local anchors), the credential files of astra's
//     home directory, the step files of GitHub Actions, and /dev beyond a
//     few character devices. Other processes' environment and memory are
//     closed by Landlock's ptrace rule (a sandboxed process cannot inspect
//     one outside its sandbox, root included), so /proc/self works for
//     every process of the tool;
//   - it writes only the directories of Policy.Writable (its own HOME and
//     TMPDIR) and, from tier 1, the worktree less Policy.Protected;
//   - it cannot signal or reach abstract sockets of processes outside its
//     sandbox (Landlock ABI 6), nor, from ABI 9, connect to sockets such as
//     Docker's.
//
// Landlock rules allow file hierarchies; there is no "deny beneath". A
// view is therefore a set of maximal subtrees that hold no protected path:
// a directory holding one is entered and its other entries allowed one by
// one. What is created in such a directory after the tool started (a new
// top-level file of the repository, say) is outside the view: a tool
// cannot create top-level files or directories in the repository.
//
// Without Landlock (an older kernel, another system) a tool runs with
// no_new_privs only, and the promises hold detectively: the runner puts
// back what a tool changed outside its declared writes. Available says
// which is the case.
package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// OffEnv, set to "off" in astra's environment, runs tools without the
// Landlock view (for a tool the view breaks, or to exercise the checks
// that stand in for it); the rest stays.
const OffEnv = "ASTRA_SANDBOX"

// Policy is what one tool may touch.
type Policy struct {
	// Repo is the repository's worktree.
	Repo string
	// WriteRepo lets the tool write the worktree less Protected (tier 1
	// and above); without it the repository is read-only.
	WriteRepo bool
	// Protected are repository paths (slash paths relative to Repo) the
	// tool never writes, whatever its tier: astra's files, CODEOWNERS, the
	// files tools run.
	Protected []string
	// Writable are directories the tool may write whatever its tier: its
	// own HOME and TMPDIR, and any the operator names.
	Writable []string
}

// view is a Policy resolved to the rules the launcher hands Landlock.
type view struct {
	Read  []rule `json:"read"`  // read and execute beneath
	Write []rule `json:"write"` // read and write beneath
	Dev   []rule `json:"dev"`   // device files and directories, read, write and ioctl
}

// rule is one path of a view; Dir says whether it is a directory, since a
// file takes only file rights.
type rule struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir,omitempty"`
}

// devices are what a tool may use of /dev: the rest (disks, memory)
// would let root read or write any file beneath the view.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"}

// credentials are files under astra's home directory that hold
// credentials of the machine's user: a tool has a HOME of its own and no
// business reading them.
var credentials = []string{".ssh", ".gnupg", ".git-credentials", ".gitconfig", ".config/git", ".config/gh", ".netrc", ".docker/config.json", ".aws", ".kube"}

// githubFiles are the environment variables naming GitHub Actions' step
// files: what earlier steps exported, and what later steps will read.
var githubFiles = []string{"GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"}

// resolve computes the view of p. getenv is astra's environment.
func (p *Policy) resolve(getenv func(string) string) (*view, error) {
	repo, err := filepath.EvalSymlinks(p.Repo)
	if err != nil {
		return nil, fmt.Errorf("the repository %s: %w", p.Repo, err)
	}
	unreadable := []string{"/dev"}
	for _, d := range gitDirs(repo) {
		unreadable = append(unreadable, filepath.Join(d, "config"), filepath.Join(d, "config.worktree"), filepath.Join(d, "astra"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		for _, c := range credentials {
			unreadable = append(unreadable, real(filepath.Join(home, c))...)
		}
	}
	for _, k := range githubFiles {
		if f := getenv(k); filepath.IsAbs(f) {
			unreadable = append(unreadable, real(f)...)
		}
	}
	v := &view{Read: subtrees("/", unreadable)}
	for _, d := range p.Writable {
		if within(repo, d) || within(d, repo) || d == repo {
			return nil, fmt.Errorf("%s names the repository or a directory in it: tools write the repository only by their tier", d)
		}
		for _, r := range real(d) {
			v.Write = append(v.Write, rule{Path: r, Dir: true})
		}
	}
	if p.WriteRepo {
		protected := []string{filepath.Join(repo, ".git")}
		for _, rel := range p.Protected {
			protected = append(protected, real(filepath.Join(repo, filepath.FromSlash(rel)))...)
		}
		v.Write = append(v.Write, subtrees(repo, protected)...)
	}
	for _, d := range devices {
		if fi, err := os.Stat(d); err == nil {
			v.Dev = append(v.Dev, rule{Path: d, Dir: fi.IsDir()})
		}
	}
	return v, nil
}

// real is p, cleaned, and where p exists and is (or passes through) a
// symlink, also where it leads: a protected path must stay protected
// under both names.
func real(p string) []string {
	out := []string{filepath.Clean(p)}
	if r, err := filepath.EvalSymlinks(p); err == nil && r != out[0] {
		out = append(out, r)
	}
	return out
}

// gitDirs are the repository's git directories: .git, or for a linked
// worktree the directory its .git file names and the common directory.
func gitDirs(repo string) []string {
	dir := filepath.Join(repo, ".git")
	if b, err := os.ReadFile(dir); err == nil {
		if d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
			dir = strings.TrimSpace(d)
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(repo, dir)
			}
		}
	}
	out := real(dir)
	if b, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(dir, common)
		}
		out = append(out, real(common)...)
	}
	return out
}

// subtrees are the largest subtrees of root that hold none of the paths
// in deny (absolute and clean). A directory holding one is entered and its
// entries taken one by one. Symlinks are never taken: Landlock would
// follow them to wherever they lead.
func subtrees(root string, deny []string) []rule {
	var out []rule
	var walk func(p string)
	walk = func(p string) {
		if slices.Contains(deny, p) {
			return
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return
		}
		if !fi.IsDir() || !slices.ContainsFunc(deny, func(d string) bool { return within(d, p) }) {
			out = append(out, rule{Path: p, Dir: fi.IsDir()})
			return
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return
		}
		for _, e := range entries {
			walk(filepath.Join(p, e.Name()))
		}
	}
	walk(root)
	return out
}

// within reports whether p lies strictly beneath dir.
func within(p, dir string) bool {
	if dir == "/" {
		return p != "/" && strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}
