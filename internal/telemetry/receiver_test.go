package telemetry

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP trace receiver: it keeps every export request as
// decoded protobuf, plus the raw (decompressed) bodies and request headers.
type receiver struct {
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	bodies   [][]byte
	headers  []map[string]string // lower-case names
	types    []string            // Content-Type (HTTP) or "grpc"
	gzipped  []bool
}

func (r *receiver) record(body []byte, ctype string, gz bool, headers map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies, r.types, r.gzipped, r.headers = append(r.bodies, body), append(r.types, ctype), append(r.gzipped, gz), append(r.headers, headers)
	if ctype == "application/json" {
		return nil // OTLP/JSON writes ids in hex, which protojson cannot read; tests look at the raw body
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(body, req); err != nil {
		return err
	}
	r.requests = append(r.requests, req)
	return nil
}

func (r *receiver) hits() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// spans returns the received spans by name, and every resource.
func (r *receiver) spans(t testing.TB) (map[string]*tracepb.Span, []*tracepb.ResourceSpans) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	byName := map[string]*tracepb.Span{}
	var res []*tracepb.ResourceSpans
	for _, req := range r.requests {
		for _, rs := range req.ResourceSpans {
			res = append(res, rs)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if byName[s.Name] != nil {
						t.Fatalf("span %q received twice", s.Name)
					}
					byName[s.Name] = s
				}
			}
		}
	}
	return byName, res
}

// newHTTPReceiver serves OTLP/HTTP on 127.0.0.1 and returns its base URL.
func newHTTPReceiver(t testing.TB) (*receiver, string) {
	r := &receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		gz := req.Header.Get("Content-Encoding") == "gzip"
		if gz {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		headers := map[string]string{}
		for k := range req.Header {
			headers[strings.ToLower(k)] = req.Header.Get(k)
		}
		if err := r.record(b, req.Header.Get("Content-Type"), gz, headers); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(resp)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// grpcReceiver serves the OTLP TraceService over gRPC.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	r *receiver
}

func (g grpcReceiver) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	headers := map[string]string{}
	for k, v := range md {
		headers[k] = strings.Join(v, ",")
	}
	gz := *ctx.Value(compressionKey{}).(*string) == "gzip"
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	return &coltracepb.ExportTraceServiceResponse{}, g.r.record(b, "grpc", gz, headers)
}

// compressionKey carries, per RPC, the compression its header named
// (grpc-encoding is not part of the metadata a handler sees).
type compressionKey struct{}

type compressionStats struct{}

func (compressionStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, compressionKey{}, new(string))
}

func (compressionStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		*ctx.Value(compressionKey{}).(*string) = h.Compression
	}
}

func (compressionStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (compressionStats) HandleConn(context.Context, stats.ConnStats) {}

// newGRPCReceiver serves OTLP/gRPC on 127.0.0.1 and returns its URL.
func newGRPCReceiver(t testing.TB) (*receiver, string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{}
	srv := grpc.NewServer(grpc.StatsHandler(compressionStats{}))
	coltracepb.RegisterTraceServiceServer(srv, grpcReceiver{r: r})
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return r, "http://" + l.Addr().String()
}

func hexID(b []byte) string { return hex.EncodeToString(b) }

// attr finds an attribute by key.
func attr(attrs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value
		}
	}
	return nil
}
