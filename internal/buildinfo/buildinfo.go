// Package buildinfo says which astra this is: its version, the commit it was
// built from and that commit's date. Release builds set them with -ldflags
// (see .goreleaser.yaml):
//
//	-X github.com/astra-gitops/astra/internal/buildinfo.version=v1.2.3
//	-X github.com/astra-gitops/astra/internal/buildinfo.commit=<sha>
//	-X github.com/astra-gitops/astra/internal/buildinfo.date=<RFC 3339>
//
// Otherwise they come from what the go command embeds: the module version
// for `go install …@v1.2.3`, the VCS revision and time for a build from a
// checkout.
package buildinfo

import (
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
)

// Set by -ldflags -X; empty in builds without them.
var version, commit, date string

// Dev is the version of a build that knows none.
const Dev = "dev"

// Info is one build's identity; empty fields are unknown.
type Info struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Date     string `json:"date,omitempty"`
	Modified bool   `json:"modified,omitempty"` // built from a checkout with local changes
}

var get = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, date, bi)
})

// Get returns this build's identity.
func Get() Info { return get() }

// Version is this build's version, e.g. v1.2.3, or "dev".
func Version() string { return get().Version }

// Commit is the full commit hash this build was made from, or "".
func Commit() string { return get().Commit }

// Date is the commit's date in RFC 3339, or "".
func Date() string { return get().Date }

// String is the one-line form for `astra version` and --version:
// "v1.2.3 (commit 0123456789ab, 2026-11-23T09:00:00Z)".
func String() string { return get().String() }

func (i Info) String() string {
	var extra []string
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += "-dirty"
		}
		extra = append(extra, "commit "+c)
	}
	if i.Date != "" {
		extra = append(extra, i.Date)
	}
	if len(extra) == 0 {
		return i.Version
	}
	return i.Version + " (" + strings.Join(extra, ", ") + ")"
}

// resolve prefers the -ldflags values and fills the rest from bi.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, Date: date}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && info.Commit == "":
				info.Commit = s.Value
			case s.Key == "vcs.time" && info.Date == "":
				info.Date = s.Value
			case s.Key == "vcs.modified" && commit == "":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = Dev
	}
	return info
}

var (
	semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	// Go pseudo-versions end in a 14-digit UTC time and a 12-digit commit prefix.
	pseudo = regexp.MustCompile(`[.-][0-9]{14}-[0-9a-f]{12}$`)
)

// IsRelease reports whether v names a published release: a vX.Y.Z tag,
// prereleases included, but not a Go pseudo-version, a version with build
// metadata (snapshots) or "dev".
func IsRelease(v string) bool {
	return semver.MatchString(v) && !pseudo.MatchString(v)
}
