package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
	"github.com/astra-gitops/astra/internal/report"
	"github.com/chromedp/chromedp"
)

// The dashboard's month: three runs a day from the 1st to the 22nd by a
// small team of agents, one of which fails now and then and once for good,
// and a Friday deploy that waits for approval.
const dashboardSchedules = `- {id: research, name: research-agent, cron: "0 0,8,16 * * *", target_tool: agent}
- {id: summary, name: nightly-summary, cron: "0 0 * * *", target_tool: summarize}
- {id: sync, name: flaky-sync, cron: "0 8 * * *", target_tool: flaky, retry: {max_attempts: 3, backoff_base: 1s}}
- {id: deploy, name: deploy-site, cron: "0 16 * * 5", target_tool: deployer, approval_ttl: 72h, budget: {max_cost_usd: 0}}
`

const dashboardPolicies = `tools:
  agent: {kind: exec, command: [./agent.sh], tier: local_write}
  summarize: {kind: exec, command: [./summarize.sh], tier: read_only}
  flaky: {kind: exec, command: [./flaky.sh], tier: read_only}
  deployer: {kind: exec, command: [./deploy.sh], tier: external, capabilities: [deploy.prod]}
budget:
  daily_limit_usd: 1.50
  monthly_limit_usd: 30
actors:
  - {actor: astra, scopes: ["*"], autonomy: L3}
roles: {ops: [octocat]}
permissions: {approve: [ops]}
`

var dashboardTools = map[string]string{
	// Spend varies with the day of the slot (ASTRA_RUN_ID is key#attempt).
	"agent.sh": `#!/bin/sh
day=$(echo "$ASTRA_RUN_ID" | sed 's/.*-0*\([0-9]*\)T.*/\1/')
cost=$(awk -v d="$day" 'BEGIN { printf "%.2f", 0.10 + ((d * 7) % 13) / 40 }')
echo "::astra-usage {\"tokens\":$((1000 + day * 37)),\"cost_usd\":$cost}"
echo "researched day $day"
`,
	"summarize.sh": "#!/bin/sh\necho \"::astra-usage {\\\"tokens\\\":800,\\\"cost_usd\\\":0.04}\"\necho summary\n",
	// Fails the first attempt every third day, and every attempt on the 20th.
	"flaky.sh": `#!/bin/sh
day=$(echo "$ASTRA_RUN_ID" | sed 's/.*-0*\([0-9]*\)T.*/\1/')
case "$ASTRA_RUN_ID" in *"#1") first=1 ;; *) first=0 ;; esac
if [ "$day" = 20 ] || { [ $((day % 3)) = 0 ] && [ $first = 1 ]; }; then
	echo "upstream returned 503 for day $day" >&2
	exit 1
fi
echo synced
`,
	"deploy.sh": "#!/bin/sh\necho deployed\n",
}

// checkTotals: the month's spend, the run and failure totals and each
// schedule's row show what the ledger holds.
func checkTotals(t *testing.T, got pageFigures, want figures) {
	t.Helper()
	if exp := fmt.Sprintf("$%.2f", want.monthUSD); got.MonthUSD != exp {
		t.Errorf("month spend shows %q, the ledger holds %s", got.MonthUSD, exp)
	}
	if want.monthUSD < 5 {
		t.Errorf("the generated month spent only $%.2f; the fixture is not exercising the chart", want.monthUSD)
	}
	if got.RunsTotal != fmt.Sprint(want.totalRuns) || got.FailuresTotal != fmt.Sprint(want.totalFailures) {
		t.Errorf("totals show %s runs, %s failures; the ledger holds %d, %d", got.RunsTotal, got.FailuresTotal, want.totalRuns, want.totalFailures)
	}
	rows := map[string][2]string{}
	for _, r := range got.Rows {
		rows[r.ID] = [2]string{r.Runs, r.Failures}
	}
	for _, id := range []string{"research", "summary", "sync", "deploy"} {
		exp := [2]string{fmt.Sprint(want.runs[id]), fmt.Sprint(want.failures[id])}
		if rows[id] != exp {
			t.Errorf("schedule %s shows runs/failures %v, the ledger holds %v", id, rows[id], exp)
		}
	}
}

// checkChart: a bar per day, each the day's spend, the tallest the most
// expensive day, and the daily limit drawn.
func checkChart(t *testing.T, got pageFigures, want figures) {
	t.Helper()
	if len(got.Bars) != 22 {
		t.Errorf("chart has %d bars, want one per day so far (22)", len(got.Bars))
	}
	var maxH float64
	var maxDay string
	for _, b := range got.Bars {
		if exp := want.dayUSD[b.Day]; math.Abs(b.USD-exp) > 1e-6 {
			t.Errorf("bar %s is $%.4f, the ledger holds $%.4f", b.Day, b.USD, exp)
		}
		if (b.Height > 0) != (b.USD > 0) {
			t.Errorf("bar %s: height %.1fpx for $%.4f", b.Day, b.Height, b.USD)
		}
		if b.Height > maxH {
			maxH, maxDay = b.Height, b.Day
		}
	}
	if top := want.topDay(); maxDay != top {
		t.Errorf("tallest bar is %s, the most expensive day in the ledger is %s", maxDay, top)
	}
	if !got.LimitLine {
		t.Error("no daily limit line on the chart")
	}
}

// TestDashboardInBrowser builds a month of real runs, writes the dashboard
// with astra report and opens it in headless Chromium: the page must render
// without console errors or blocked requests and show the figures the
// ledger holds. ASTRA_DASHBOARD_SCREENSHOT=path saves a screenshot (the
// one in docs/).
func TestDashboardInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	dir := t.TempDir()
	files := map[string]string{"schedules/team.yaml": dashboardSchedules, "policies/policy.yaml": dashboardPolicies}
	for name, body := range dashboardTools {
		files[name] = body
	}
	writeTree(t, dir, files)
	astra := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := Execute(context.Background(), append([]string{"--repo", dir}, args...), strings.NewReader(""), &out, &errb,
			[]string{"GITHUB_REPOSITORY=acme/agents"})
		if code != 0 && code != errkind.ExitFailed {
			t.Fatalf("astra %v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String()
	}
	for day := 1; day <= 22; day++ {
		for _, hour := range []int{1, 9, 17} {
			astra("run-due", "--no-git", "--now", fmt.Sprintf("2026-11-%02dT%02d:00:05Z", day, hour), "--test-clock")
		}
	}
	now := "2026-11-22T18:30:00Z"
	astra("report", "--out", filepath.Join(dir, "site"), "--now", now)
	want := ledgerFigures(t, astra("ledger", "cat"))

	got, shot := openDashboard(t, browser, filepath.Join(dir, "site", "index.html"))
	if len(got.Errors) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(got.Errors, "\n"))
	}
	checkTotals(t, got, want)
	checkChart(t, got, want)
	if len(got.Pending) != 1 || got.Pending[0] != "deploy" {
		t.Errorf("pending approvals %v, want [deploy]", got.Pending)
	}
	if len(got.Dead) != 1 || !strings.HasPrefix(got.Dead[0], "sync@2026-11-20T08:00:00Z") {
		t.Errorf("dead letters %v, want the 20th's sync slot", got.Dead)
	}
	if !sort.SliceIsSorted(got.SortedRuns, func(i, j int) bool { return got.SortedRuns[i] > got.SortedRuns[j] }) || len(got.SortedRuns) != 4 {
		t.Errorf("clicking Runs twice should sort descending, got %v", got.SortedRuns)
	}
	if p := os.Getenv("ASTRA_DASHBOARD_SCREENSHOT"); p != "" {
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserCheckCatchesErrors shows that openPage's error capture
// works: a page that throws and loads an external image fails the check.
func TestBrowserCheckCatchesErrors(t *testing.T) {
	browser := chromiumPath(t)
	p := filepath.Join(t.TempDir(), "bad.html")
	page := `<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'">
<img src="https://example.invalid/logo.png"><script>console.error("boom"); undefinedFunction();</script>`
	if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, _ := openPage[string](t, browser, p, "document.title")
	joined := strings.Join(errs, "\n")
	for _, want := range []string{"boom", "undefinedFunction", "example.invalid"} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors do not mention %q:\n%s", want, joined)
		}
	}
}

// chromiumPath finds headless Chromium; without it the browser tests skip,
// unless ASTRA_REQUIRE_BROWSER=1 (set by .ci/run) makes that a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("ASTRA_REQUIRE_BROWSER") == "1" {
		t.Fatal("ASTRA_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH")
	return ""
}

type pageFigures struct {
	MonthUSD      string `json:"monthUSD"`
	RunsTotal     string `json:"runsTotal"`
	FailuresTotal string `json:"failuresTotal"`
	Rows          []struct {
		ID       string `json:"id"`
		Runs     string `json:"runs"`
		Failures string `json:"failures"`
	} `json:"rows"`
	Bars []struct {
		Day    string  `json:"day"`
		USD    float64 `json:"usd"`
		Height float64 `json:"height"`
	} `json:"bars"`
	LimitLine  bool     `json:"limitLine"`
	Pending    []string `json:"pending"`
	Dead       []string `json:"dead"`
	SortedRuns []int    `json:"sortedRuns"`
	Errors     []string `json:"-"`
}

// readPage collects what a reader sees: visible text of the figures, and
// the rendered size of the chart's bars.
const readPage = `(() => {
  const q = s => document.querySelector(s);
  const text = s => q(s) ? q(s).textContent.trim() : "";
  const th = [...document.querySelectorAll("#schedules th")].find(h => h.textContent.trim() === "Runs");
  const out = {
    monthUSD: text("#month-usd"), runsTotal: text("#runs-total"), failuresTotal: text("#failures-total"),
    rows: [...document.querySelectorAll("#schedules tbody tr")].map(tr => ({id: tr.dataset.schedule, runs: tr.children[2].textContent.trim(), failures: tr.children[3].textContent.trim()})),
    bars: [...document.querySelectorAll("#spend rect.bar")].map(r => ({day: r.dataset.day, usd: parseFloat(r.dataset.usd), height: r.getBoundingClientRect().height})),
    limitLine: !!q("#day-limit"),
    pending: [...document.querySelectorAll("#pending tbody tr")].map(tr => tr.dataset.schedule),
    dead: [...document.querySelectorAll("#dead tbody tr")].map(tr => tr.dataset.key),
  };
  if (th) { th.click(); th.click(); }
  out.sortedRuns = [...document.querySelectorAll("#schedules tbody tr")].map(tr => parseInt(tr.children[2].textContent, 10));
  return out;
})()`

// openDashboard loads the dashboard and reads the figures it shows.
func openDashboard(t *testing.T, browser, file string) (pageFigures, []byte) {
	t.Helper()
	fig, errs, shot := openPage[pageFigures](t, browser, file, readPage)
	fig.Errors = errs
	return fig, shot
}

// openPage loads file in headless Chromium, evaluates script there, and
// returns its value, the console errors, warnings and exceptions (blocked
// loads included) and a full-page PNG screenshot.
func openPage[T any](t *testing.T, browser, file, script string) (T, []string, []byte) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // CI containers run as root
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 900),
	)
	// The timeout bounds the whole browser: a hung page fails the test.
	actx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	actx, cancel = chromedp.NewExecAllocator(actx, opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	var mu sync.Mutex
	var errs []string
	messages := chromedp.Console(ctx) // subscribes now, before the page loads
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s (%s %s:%d)", m, m.Source, m.URL, m.Line))
				mu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script))
	if err != nil {
		t.Fatalf("evaluating on the page: %v", err)
	}
	// Let late events (image loads, CSP reports) arrive, then stop listening.
	if err := chromedp.Do(ctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return v, errs, shot
}

// figures is what the ledger holds, summed independently of astra's own
// replay from the raw NDJSON.
type figures struct {
	monthUSD                 float64
	dayUSD                   map[string]float64
	runs, failures           map[string]int
	totalRuns, totalFailures int
}

func (f figures) topDay() string {
	top := ""
	for d, v := range f.dayUSD {
		if top == "" || v > f.dayUSD[top] || (v == f.dayUSD[top] && d < top) {
			top = d
		}
	}
	return top
}

func ledgerFigures(t *testing.T, ndjson string) figures {
	t.Helper()
	f := figures{dayUSD: map[string]float64{}, runs: map[string]int{}, failures: map[string]int{}}
	sc := bufio.NewScanner(strings.NewReader(ndjson))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Event      string    `json:"event"`
			TS         time.Time `json:"ts"`
			ScheduleID string    `json:"schedule_id"`
			Usage      struct {
				Cost float64 `json:"cost_usd"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("ledger line %q: %v", sc.Text(), err)
		}
		switch e.Event {
		case "run.completed":
			f.runs[e.ScheduleID]++
			f.totalRuns++
		case "run.failed":
			f.failures[e.ScheduleID]++
			f.totalFailures++
		default:
			continue
		}
		f.monthUSD += e.Usage.Cost
		f.dayUSD[e.TS.UTC().Format(time.DateOnly)] += e.Usage.Cost
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return f
}

// pagedFigures is what a reader sees of the dashboard's long tables.
type pagedFigures struct {
	Title        string   `json:"title"`
	Visible      int      `json:"visible"`     // schedules rows shown
	Pager        string   `json:"pager"`       // its label
	AfterNext    string   `json:"afterNext"`   // the label after Next
	FirstOnNext  string   `json:"firstOnNext"` // the first row shown then
	DeadRows     int      `json:"deadRows"`
	DeadVisible  int      `json:"deadVisible"`
	DeadMore     string   `json:"deadMore"`
	Groups       []string `json:"groups"` // dead letters by schedule: "name count"
	DeadTotal    string   `json:"deadTotal"`
	SortedToPage string   `json:"sortedToPage"` // the label after sorting on page 2
}

const readPaged = `(() => {
  const shown = s => [...document.querySelectorAll(s + " tbody tr")].filter(tr => !tr.hidden);
  const label = id => { const n = document.querySelector("#" + id + " + nav.pager span"); return n ? n.textContent : ""; };
  const out = {title: document.title, visible: shown("#schedules").length, pager: label("schedules")};
  document.querySelector("#schedules + nav.pager button:last-child").click();
  out.afterNext = label("schedules");
  out.firstOnNext = shown("#schedules")[0].dataset.schedule;
  out.deadRows = document.querySelectorAll("#dead tbody tr").length;
  out.deadVisible = shown("#dead").length;
  out.deadMore = document.querySelector("#dead-more").textContent;
  out.groups = [...document.querySelectorAll("#dead-by-schedule tbody tr")].map(tr => tr.dataset.schedule + " " + tr.children[1].textContent);
  out.deadTotal = document.querySelector("#dead-total").textContent;
  document.querySelector("#schedules th").click();
  out.sortedToPage = label("schedules");
  return out;
})()`

// TestDashboardPagesInBrowser: a repository with thousands of dead letters
// and schedules gets a page that shows them a page at a time, the dead
// letters summed up by schedule and the newest listed, and its name in
// the title.
func TestDashboardPagesInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	gen := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	d := report.Data{Generated: gen, Month: "2026-11", Name: "acme/big"}
	for i := range 120 {
		d.Schedules = append(d.Schedules, report.ScheduleStats{ID: fmt.Sprintf("s%03d", i), Name: fmt.Sprintf("s%03d", i), Runs: i})
	}
	for i := range 3000 {
		name := []string{"sync", "mail", "build"}[min(i%10, 2)]
		d.DeadLetters = append(d.DeadLetters, report.DeadLetter{Key: fmt.Sprintf("%s@%d", name, i), Name: name, Attempts: 3,
			Error: "exit status 1", At: gen.Add(time.Duration(i-3000) * time.Minute)})
	}
	p := filepath.Join(t.TempDir(), "index.html")
	var page bytes.Buffer
	if err := report.HTML(&page, d); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, errs, _ := openPage[pagedFigures](t, browser, p, readPaged)
	if len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	want := pagedFigures{Title: "astra · acme/big · November 2026", Visible: 50, Pager: "1–50 of 120", AfterNext: "51–100 of 120", FirstOnNext: "s050",
		DeadRows: 100, DeadVisible: 20, DeadMore: "2900 older: astra dead-letter list", Groups: []string{"build 2400", "mail 300", "sync 300"},
		DeadTotal: "3000", SortedToPage: "1–50 of 120"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the page shows\n%+v\nwant\n%+v", got, want)
	}
}
