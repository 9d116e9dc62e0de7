package gitops

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"

	"github.com/astra-gitops/astra/internal/seal"
)

// Benchmarks run only with -bench; the 50,000-file repository is generated
// on first use by a benchmark, never by the tests.

var big struct {
	once sync.Once
	dir  string // template repository (removed by TestMain)
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if big.dir != "" {
		os.RemoveAll(big.dir)
	}
	os.Exit(code)
}

const (
	bigDirs       = 2500 // 50 × 50 leaf directories
	filesPerDir   = 20   // 50,000 files in all
	benchSchedule = "var/schedules/bench.yaml"
)

// bigRepo returns a fresh clone of a 50,000-file repository (made once with
// git fast-import, so set-up takes seconds).
func bigRepo(b *testing.B) string {
	b.Helper()
	big.once.Do(func() {
		big.dir, big.err = os.MkdirTemp("", "astra-bench-50k-")
		if big.err == nil {
			big.err = buildBigRepo(filepath.Join(big.dir, "template"))
		}
	})
	if big.err != nil {
		b.Fatal(big.err)
	}
	dir := filepath.Join(b.TempDir(), "clone")
	gitCmd(b, ".", "clone", "-q", filepath.Join(big.dir, "template"), dir)
	gitCmd(b, dir, "config", "gc.auto", "0")
	return dir
}

func buildBigRepo(dir string) error {
	if out, err := gitRun(".", "init", "-q", "-b", "main", dir); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Env = gitEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(stdin, 1<<20)
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 4\nseed\n")
	inline := func(path, content string) {
		fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", path, len(content), content)
	}
	for d := 0; d < bigDirs; d++ {
		for f := 0; f < filesPerDir; f++ {
			inline(fmt.Sprintf("src/d%02d/e%02d/f%02d.txt", d/50, d%50, f), fmt.Sprintf("file %d/%d\n", d, f))
		}
	}
	inline(benchSchedule, "id: bench\n")
	inline("var/schedules/2025-01.ndjson.gz", "ledger\n")
	w.WriteString("\n")
	if err := w.Flush(); err != nil {
		return err
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git fast-import: %v: %s", err, stderr.String())
	}
	if out, err := gitRun(dir, "reset", "-q", "--hard"); err != nil {
		return fmt.Errorf("git reset: %v: %s", err, out)
	}
	return nil
}

// BenchmarkCommitGoGit: one astra run's commit of one changed schedule file in
// a 50,000-file repository. "open-each" opens the repository every time, as
// a run (a new process) does; "reuse" keeps it open.
func BenchmarkCommitGoGit(b *testing.B) {
	for _, reopen := range []bool{true, false} {
		name := map[bool]string{true: "open-each", false: "reuse"}[reopen]
		b.Run(name, func(b *testing.B) {
			dir := bigRepo(b)
			r := open(b, dir)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := os.WriteFile(filepath.Join(dir, benchSchedule), []byte("id: bench\nrun: "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
					b.Fatal(err)
				}
				if reopen {
					r = open(b, dir)
				}
				if _, changed, err := r.Commit("x", benchSchedule); err != nil || !changed {
					b.Fatal(changed, err)
				}
			}
			b.StopTimer()
			assertClean(b, dir)
		})
	}
}

// BenchmarkCommitSealed is BenchmarkCommitGoGit/reuse with 300 files
// under var/ (a year of ledger segments, memory and quarantine), unsealed
// and sealed: every commit lists the sealed files of its tree and signs
// them with an Ed25519 ledger key, as ledgerkey's hook does.
func BenchmarkCommitSealed(b *testing.B) {
	priv, _, err := seal.Generate("bench")
	if err != nil {
		b.Fatal(err)
	}
	signer, err := seal.ParseSigner(priv)
	if err != nil {
		b.Fatal(err)
	}
	sealing := &Sealing{Paths: []string{"var/"}, Except: []string{"var/approvals/pending/"},
		Sign: func(branch, parent string, entries []Entry) (string, error) {
			var msg strings.Builder
			msg.WriteString("astra commit v1\nbranch " + branch + "\nparent " + parent + "\n")
			for _, e := range entries {
				msg.WriteString(e.Blob + " " + e.Path + "\x00")
			}
			sig, err := signer.Sign(seal.Ledger, []byte(msg.String()))
			return "Astra-Seal: " + base64.StdEncoding.EncodeToString(sig), err
		}}
	for _, sealed := range []bool{false, true} {
		b.Run(fmt.Sprintf("sealed=%v", sealed), func(b *testing.B) {
			dir := bigRepo(b)
			for m := range 300 {
				writeFile(b, dir, fmt.Sprintf("var/schedules/%04d-%02d.%03d.ndjson.gz", 2000+m/60, 1+m/5%12, m%5), fmt.Sprintf("segment %d\n", m))
			}
			gitCmd(b, dir, "add", "-A")
			gitCmd(b, dir, "commit", "-q", "-m", "a year of ledger")
			r := open(b, dir)
			if sealed {
				r = open(b, dir, func(o *Options) { o.Sealing = sealing })
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := os.WriteFile(filepath.Join(dir, benchSchedule), []byte("id: bench\nrun: "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
					b.Fatal(err)
				}
				if _, changed, err := r.Commit("x", benchSchedule); err != nil || !changed {
					b.Fatal(changed, err)
				}
			}
		})
	}
}

// BenchmarkCommitGitCLI: the same change committed with
// `git add <file> && git commit -q -m x`.
func BenchmarkCommitGitCLI(b *testing.B) {
	dir := bigRepo(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := os.WriteFile(filepath.Join(dir, benchSchedule), []byte("id: bench\nrun: "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		gitCmd(b, dir, "add", benchSchedule)
		gitCmd(b, dir, "commit", "-q", "-m", "x")
	}
}

// BenchmarkCommitFullSegment: a run's commit when the ledger segment it
// appended to is near the 4 MiB rollover (hashing and storing the segment
// dominate), astra vs the git CLI.
func BenchmarkCommitFullSegment(b *testing.B) {
	for _, cli := range []bool{false, true} {
		name := map[bool]string{false: "astra", true: "git-cli"}[cli]
		b.Run(name, func(b *testing.B) {
			dir := cloneCLI(b, fileURL(newRemote(b)), false)
			gitCmd(b, dir, "config", "gc.auto", "0")
			rng := rand.New(rand.NewSource(1))
			var seg []byte
			for run := 0; len(seg) < segmentLimit-512<<10; run++ {
				seg = append(seg, ledgerMember(rng, run)...)
			}
			path := "var/schedules/2025-01.000.ndjson.gz"
			writeFile(b, dir, path, string(seg))
			gitCmd(b, dir, "add", path)
			gitCmd(b, dir, "commit", "-q", "-m", "segment")
			members := make([][]byte, b.N)
			for i := range members {
				members[i] = ledgerMember(rng, i)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f, err := os.OpenFile(filepath.Join(dir, path), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				f.Write(members[i])
				f.Close()
				if cli {
					gitCmd(b, dir, "add", path)
					gitCmd(b, dir, "commit", "-q", "-m", "x")
				} else if _, _, err := open(b, dir).Commit("x", path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// monthRuns is how many runs BenchmarkPushBytes simulates: 30 days × 24
// runs a day unless ASTRA_BENCH_RUNS says otherwise.
func monthRuns() int {
	if n, err := strconv.Atoi(os.Getenv("ASTRA_BENCH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 30 * 24
}

const (
	segmentLimit = 4 << 20 // the ledger rolls over to a new segment at 4 MiB
	eventsPerRun = 48      // ≈ 6 KB gzip member per run: one rollover a month
)

// ledgerMember is one run's appended gzip member: NDJSON events whose hashes
// and trace ids are random, so it compresses like a real ledger.
func ledgerMember(rng *rand.Rand, run int) []byte {
	var raw bytes.Buffer
	hexs := func(n int) string {
		b := make([]byte, n)
		rng.Read(b)
		return hex.EncodeToString(b)
	}
	for i := 0; i < eventsPerRun; i++ {
		fmt.Fprintf(&raw, `{"seq":%d,"ts":"2025-01-%02dT%02d:%02d:00Z","event":"run.completed","schedule_id":"sched-%d","slot":"2025-01-%02dT%02d:00:00Z","idempotency_key":"sched-%d@%s","actor":"ci","tool":"http.get","tier":1,"status":"ok","trace_id":"%s","span_id":"%s","scheduled_vs_manual":"scheduled","output_sha256":"%s","prev":"%s"}`+"\n",
			run*eventsPerRun+i, run/24%28+1, run%24, i, i%7, run/24%28+1, run%24, i%7, hexs(4), hexs(16), hexs(8), hexs(32), hexs(32))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw.Bytes())
	zw.Close()
	return gz.Bytes()
}

// pushVariant is one way of committing and pushing a run.
type pushVariant struct {
	name string
	// run commits path (relative to dir) and pushes it.
	run func(b *testing.B, dir, path string) error
}

func astraVariant() pushVariant {
	return pushVariant{"astra", func(b *testing.B, dir, path string) error {
		r := open(b, dir)
		if _, _, err := r.Commit("run", path); err != nil {
			return err
		}
		return r.Push(context.Background())
	}}
}

// goGitStockVariant commits like astra but pushes with go-git's own
// Remote.Push, to show what go-git sends by itself.
func goGitStockVariant() pushVariant {
	return pushVariant{"go-git-push", func(b *testing.B, dir, path string) error {
		r := open(b, dir)
		if _, _, err := r.Commit("run", path); err != nil {
			return err
		}
		err := r.repo.PushContext(context.Background(), &git.PushOptions{
			RemoteName: "origin",
			RefSpecs:   []config.RefSpec{"refs/heads/main:refs/heads/main"},
		})
		if err == git.NoErrAlreadyUpToDate {
			err = nil
		}
		return err
	}}
}

func gitCLIVariant() pushVariant {
	return pushVariant{"git-cli", func(b *testing.B, dir, path string) error {
		if out, err := gitRun(dir, "add", path); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if out, err := gitRun(dir, "commit", "-q", "-m", "run [skip ci]"); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if out, err := gitRun(dir, "push", "-q", "origin", "main"); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}}
}

// BenchmarkPushBytes simulates a month of cron runs (30 days × 24), each
// appending a gzip member (≈6 KB) to the current ledger segment, rolling over
// at 4 MiB, committing and pushing over smart HTTP to a bare remote. It
// reports the bytes each push sent (request bodies to git-receive-pack). One
// op is one month; run with -benchtime=1x.
func BenchmarkPushBytes(b *testing.B) {
	for _, v := range []pushVariant{astraVariant(), goGitStockVariant(), gitCLIVariant()} {
		b.Run(v.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				remote := newRemote(b)
				srv := newGitHTTPServer(b, filepath.Dir(remote), "")
				dir := cloneCLI(b, fileURL(remote), true)
				gitCmd(b, dir, "remote", "set-url", "origin", srv.URL+"/remote.git")
				gitCmd(b, dir, "config", "gc.auto", "0")
				gitCmd(b, dir, "config", "http.postBuffer", "104857600")
				gitCmd(b, remote, "config", "gc.auto", "0")
				rng := rand.New(rand.NewSource(1))
				segment, size := 0, 0
				var total, maxPush, atRollover int64
				runs := monthRuns()
				b.StartTimer()
				for run := 0; run < runs; run++ {
					member := ledgerMember(rng, run)
					if size+len(member) > segmentLimit {
						segment, size = segment+1, 0
					}
					path := fmt.Sprintf("var/schedules/2025-01.%03d.ndjson.gz", segment)
					f, err := os.OpenFile(filepath.Join(dir, path), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
					if err != nil {
						if err = os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err == nil {
							f, err = os.OpenFile(filepath.Join(dir, path), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					f.Write(member)
					f.Close()
					size += len(member)

					before := srv.pushed.Load()
					if err := v.run(b, dir, path); err != nil {
						b.Fatalf("run %d: %v", run, err)
					}
					sent := srv.pushed.Load() - before
					total += sent
					maxPush = max(maxPush, sent)
					if size == len(member) && segment > 0 {
						atRollover = sent
					}
					if run%24 == 23 { // daily: keep disk use sane, as a host's gc would
						b.StopTimer()
						gitCmd(b, dir, "repack", "-adq")
						gitCmd(b, remote, "repack", "-adq")
						b.StartTimer()
					}
				}
				b.StopTimer()
				assertRemoteOK(b, remote, "main")
				b.ReportMetric(float64(total)/float64(runs), "bytes/push")
				b.ReportMetric(float64(maxPush), "max-bytes/push")
				b.ReportMetric(float64(size), "last-segment-bytes")
				b.ReportMetric(float64(segment+1), "segments")
				if atRollover > 0 {
					b.ReportMetric(float64(atRollover), "rollover-push-bytes")
				}
				b.StartTimer()
			}
		})
	}
}
