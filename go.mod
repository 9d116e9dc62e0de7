module github.com/astra-gitops/astra

go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.0 // tests only: drives headless Chromium for the dashboard test
	github.com/go-git/go-billy/v5 v5.9.2 // go-git's filesystem: opening partial clones and sparse checkouts (internal/gitops)
	github.com/go-git/go-git/v5 v5.19.3 // mandated: all git work (internal/gitops) and the fake GitHub's real repository
	github.com/go-jose/go-jose/v4 v4.1.8 // JWT and JWKS for trigger callers (internal/identity): no dependencies, explicit algorithm allow-list, the JOSE core under coreos/go-oidc
	github.com/google/go-github/v60 v60.0.0 // mandated: GitHub REST client and its types (internal/forge)
	github.com/klauspost/compress v1.20.3 // mandated: gzip ledger members, fast zlib for loose objects
	github.com/robfig/cron/v3 v3.0.1 // tests only: the reference the cron parser and day walk are checked against
	github.com/rogpeppe/go-internal v1.16.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // tools' input_schema: payloads and events checked against JSON Schema (internal/inputschema); tests validate configuration and ledger events against schema/, the fake GitHub against the OpenAPI description
	github.com/spf13/cobra v1.10.2
	github.com/spf13/viper v1.21.0
	go.opentelemetry.io/otel v1.47.0 // tracing API: attributes, W3C traceparent parsing (internal/telemetry)
	go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc v1.47.0 // OTLP/gRPC metric exporter, beside the span exporter of the same protocol
	go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp v1.47.0 // OTLP/HTTP metric exporter, the default protocol
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.47.0 // OTLP/gRPC span exporter (OTEL_EXPORTER_OTLP_PROTOCOL=grpc)
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp v1.47.0 // OTLP/HTTP span exporter, the default protocol
	go.opentelemetry.io/otel/metric v1.47.0 // metrics API: the instruments a run records (internal/telemetry)
	go.opentelemetry.io/otel/sdk v1.47.0 // the official SDK: batch span processor, resource, id generator for astra's own ids
	go.opentelemetry.io/otel/sdk/metric v1.47.0 // the official metrics SDK: a manual reader, exported once at the end of a run
	go.opentelemetry.io/otel/trace v1.47.0 // span contexts carrying astra's trace and span ids
	go.opentelemetry.io/proto/otlp v1.11.1 // tests only: the in-process OTLP receiver decodes what the exporters send
	google.golang.org/grpc v1.84.0 // transport credentials for the OTLP/gRPC exporter; the tests' OTLP/gRPC receiver
	google.golang.org/protobuf v1.36.12 // tests only: unmarshal OTLP protobuf bodies
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/hiddeco/sshsig v0.2.0 // SSHSIG (ssh-keygen -Y sign) for ledger seals and signed approvals (internal/seal)
	github.com/landlock-lsm/go-landlock v0.11.2 // Landlock rulesets for tools' filesystem views, best effort per kernel ABI (internal/sandbox)
	github.com/spf13/pflag v1.0.10
	golang.org/x/crypto v0.57.0 // SSH keys (internal/seal)
	golang.org/x/sys v0.49.0 // prctl: no_new_privs, not dumpable, child subreaper, capability bounding set (internal/sandbox, internal/executor)
)

require (
	dario.cat/mergo v1.0.0 // indirect
	github.com/Microsoft/go-winio v0.6.2 // indirect
	github.com/ProtonMail/go-crypto v1.1.6 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/cloudflare/circl v1.6.3 // indirect
	github.com/cyphar/filepath-securejoin v0.6.1 // indirect
	github.com/emirpasic/gods v1.18.1 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/go-git/gcfg v1.5.1-0.20230307220236-3a3c6141e376 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-viper/mapstructure/v2 v2.5.0 // indirect
	github.com/golang/groupcache v0.0.0-20241129210726-2c02b8208cf8 // indirect
	github.com/google/go-querystring v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.31.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/jbenet/go-context v0.0.0-20150711004518-d14ea06fba99 // indirect
	github.com/kevinburke/ssh_config v1.2.0 // indirect
	github.com/pelletier/go-toml/v2 v2.2.4 // indirect
	github.com/pjbgf/sha1cd v0.7.0 // indirect
	github.com/sagikazarmark/locafero v0.11.0 // indirect
	github.com/sergi/go-diff v1.3.2-0.20230802210424-5b0b94c5c0d3 // indirect
	github.com/skeema/knownhosts v1.3.1 // indirect
	github.com/sourcegraph/conc v0.3.1-0.20240121214520-5f936abd7ae8 // indirect
	github.com/spf13/afero v1.15.0 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	github.com/subosito/gotenv v1.6.0 // indirect
	github.com/xanzy/ssh-agent v0.3.3 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	golang.org/x/tools v0.50.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
	gopkg.in/warnings.v0 v0.1.2 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
)
