package kruntimes

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// What the client decides on its own, and how it reads a connection's failures. The
// stand-in gateways here are local HTTPS servers (127.0.0.1) that answer what the test needs;
// the real gateway is in sandbox_integration_test.go.

// local clears what the live suite's environment sets (KRT_GATEWAY_URL, KRT_GATEWAY_CA_FILE): these tests choose their own gateway.
func local(t *testing.T) {
	t.Setenv(EnvGateway, "")
	t.Setenv(EnvGatewayCAFile, "")
}

func TestRefusedBeforeSending(t *testing.T) {
	local(t)
	endpoint := Endpoint{URL: "https://127.0.0.1:9/v1/namespaces/demo/runtimes/py/functions/uid:invoke"}
	cases := []struct {
		name    string
		payload any
		opts    InvokeOptions
		code    string
	}{
		{"invocation ID with a space", 1, InvokeOptions{Token: "t", InvocationID: "a b"}, CodeInvalidInvocationID},
		{"invocation ID too long", 1, InvokeOptions{Token: "t", InvocationID: strings.Repeat("x", 129)}, CodeInvalidInvocationID},
		{"payload over 1 MiB", strings.Repeat("x", MaxRequestBytes), InvokeOptions{Token: "t"}, CodePayloadTooLarge},
		{"raw payload not JSON", json.RawMessage("not json"), InvokeOptions{Token: "t"}, CodeInvalidRequest},
		{"payload not a JSON value", func() {}, InvokeOptions{Token: "t"}, CodeInvalidRequest},
		{"no token", 1, InvokeOptions{}, CodeInvalidRequest},
		{"token a header cannot carry", 1, InvokeOptions{Token: "a\nb"}, CodeInvalidRequest},
		{"gateway with a path", 1, InvokeOptions{Token: "t", Gateway: "https://127.0.0.1:9/x"}, CodeInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Invoke(context.Background(), endpoint, c.payload, c.opts)
			e, ok := AsError(err)
			if !ok || e.Code != c.code || e.Sent() || e.Source != SourcePlatform {
				t.Fatalf("want %s refused before sending, got %#v", c.code, err)
			}
		})
	}
	_, err := Invoke(context.Background(), Endpoint{URL: "http://127.0.0.1:9/x"}, 1, InvokeOptions{Token: "t"})
	if e, ok := AsError(err); !ok || e.Code != CodeInvalidRequest {
		t.Fatalf("an http endpoint: want InvalidRequest, got %v", err)
	}
}

func TestToolReasonsFromTheHandlersMessage(t *testing.T) {
	traceback := "Traceback (most recent call last):\n  File \"/w/main.py\", line 9, in handle\n    raise ValueError(m)\nValueError: %s\n"
	cases := []struct {
		message, reason string
	}{
		{strings.Replace(traceback, "%s", "PathOutsideWorkspace: '../x' resolves outside the workspace", 1), ReasonPathOutsideWorkspace},
		{strings.Replace(traceback, "%s", "InvalidToolCall: unknown tool 'rm'", 1), ReasonInvalidToolCall},
		{"...ne 9, in handle\n    raise X\nTimeoutError: ExecTimeout: timed out after 2 s; stdout: 'x'", ReasonExecTimeout},
		// The stock handler raises without a traceback: its message is the exception line.
		{"kruntimes_sandbox.SandboxError: PathOutsideWorkspace: '/etc' is absolute\n", ReasonPathOutsideWorkspace},
		{"kruntimes_sandbox.SandboxError: ExecTimeout: timed out after 1 s\n--- stdout (3 bytes) ---\nInvalidToolCall: x\n", ReasonExecTimeout},
		// The tool's own output quoted in the message never decides the reason.
		{strings.Replace(traceback, "%s", "ExecTimeout: timed out after 3 s; stdout: 'PathOutsideWorkspace: no'", 1), ReasonExecTimeout},
		{strings.Replace(traceback, "%s", "timed out after 3 s", 1), ""},
		{strings.Replace(traceback, "%s", "KeyError: 'content'", 1), ""},
	}
	for _, c := range cases {
		body, _ := json.Marshal(map[string]any{"invocationId": "i-1", "error": map[string]any{"code": "FunctionFailed", "message": c.message, "source": "function"}})
		e := withToolReason(errorFromAnswer(500, body, "i-0"))
		if e.Reason != c.reason || e.Code != CodeFunctionFailed || e.Source != SourceFunction || e.InvocationID != "i-1" || e.HTTPStatus != 500 {
			t.Errorf("%q: got %#v, want reason %q", c.message, e, c.reason)
		}
	}
	platform := withToolReason(errorFromAnswer(503, []byte(`{"error":{"code":"RunNotReady","message":"PathOutsideWorkspace: x","source":"platform"}}`), "i-2"))
	if platform.Reason != "" || platform.Code != CodeRunNotReady {
		t.Fatalf("a platform error is never a tool error: %#v", platform)
	}
}

// gateway is a local HTTPS stand-in and a CA file that verifies it.
func gateway(t *testing.T, handler http.HandlerFunc) (*httptest.Server, string, *atomic.Int32) {
	t.Helper()
	server := httptest.NewUnstartedServer(handler)
	var connections atomic.Int32
	server.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			connections.Add(1)
		}
	}
	server.StartTLS()
	t.Cleanup(server.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	certificate := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	if err := os.WriteFile(ca, certificate, 0o600); err != nil {
		t.Fatal(err)
	}
	return server, ca, &connections
}

func endpointOf(server *httptest.Server) Endpoint {
	return Endpoint{URL: server.URL + "/v1/namespaces/demo/runtimes/py/functions/uid:invoke"}
}

func TestOneConnectionServesEveryCallOfAClient(t *testing.T) {
	local(t)
	server, ca, connections := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set(InvocationIDHeader, r.Header.Get(InvocationIDHeader))
		_, _ = w.Write([]byte(`{"invocationId":"` + r.Header.Get(InvocationIDHeader) + `","result":{"ok":true},"attempt":1}`))
	})
	client, err := NewHTTPClient(endpointOf(server), ca)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		answer, err := Invoke(context.Background(), endpointOf(server), map[string]int{"i": i}, InvokeOptions{Token: "secret-token", HTTPClient: client, InvocationID: "reuse"})
		if err != nil || string(answer.Result) != `{"ok":true}` || answer.InvocationID != "reuse" || answer.Attempt != 1 {
			t.Fatalf("call %d: %v %+v", i, err, answer)
		}
	}
	if n := connections.Load(); n != 1 {
		t.Fatalf("want one connection for three calls, got %d", n)
	}
}

func TestAConnectionTheGatewayEndsIsNotUsedAgain(t *testing.T) {
	local(t)
	var calls atomic.Int32
	server, ca, connections := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Connection", "close")
		_, _ = w.Write([]byte(`{"result":1}`))
	})
	client, err := NewHTTPClient(endpointOf(server), ca)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := Invoke(context.Background(), endpointOf(server), 1, InvokeOptions{Token: "t", HTTPClient: client}); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 2 || connections.Load() != 2 {
		t.Fatalf("want 2 calls over 2 connections, got %d over %d", calls.Load(), connections.Load())
	}
}

func TestIdleConnectionsEndBeforeTheGatewayEndsThem(t *testing.T) {
	local(t)
	client, err := NewHTTPClient(Endpoint{URL: "https://127.0.0.1:9/x"}, "")
	if err != nil {
		t.Fatal(err)
	}
	// Node's keep-alive timeout (the gateway's) is 5 s: a connection it may be closing is
	// never written to, which would make a call ambiguous for nothing.
	if idle := client.Transport.(*http.Transport).IdleConnTimeout; idle <= 0 || idle >= 5*time.Second {
		t.Fatalf("idle connections are kept %s", idle)
	}
}

func TestConnectAndTLSFailuresSayNothingWasSent(t *testing.T) {
	local(t)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := listener.Addr().String()
	listener.Close()
	_, err = Invoke(context.Background(), Endpoint{URL: "https://" + closed + "/x"}, 1, InvokeOptions{Token: "t"})
	if e, ok := AsError(err); !ok || e.Code != CodeTransport || e.TransportKind != "connect" || e.RequestMayHaveBeenSent || !e.Retryable() {
		t.Fatalf("a refused connection: %#v", err)
	}
	server, _, _ := gateway(t, func(w http.ResponseWriter, r *http.Request) { t.Error("a request reached the server") })
	// The system roots do not know the stand-in's CA.
	_, err = Invoke(context.Background(), endpointOf(server), 1, InvokeOptions{Token: "secret-token"})
	e, ok := AsError(err)
	if !ok || e.TransportKind != "tls" || e.RequestMayHaveBeenSent {
		t.Fatalf("an unverified gateway: %#v", err)
	}
	if strings.Contains(e.Error(), "secret-token") {
		t.Fatal("the token is in the error")
	}
}

func TestATimeoutAfterSendingMayHaveRunAndIsNotRetried(t *testing.T) {
	local(t)
	var calls atomic.Int32
	release := make(chan struct{})
	server, ca, _ := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	_, err := Invoke(context.Background(), endpointOf(server), 1, InvokeOptions{Token: "t", CAFile: ca, Timeout: 300 * time.Millisecond})
	e, ok := AsError(err)
	if !ok || e.TransportKind != "timeout" || !e.RequestMayHaveBeenSent || e.Retryable() {
		t.Fatalf("want a timeout that may have run, got %#v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("the request was sent %d times", calls.Load())
	}
}

func TestAGatewayRefusalIsTypedWithItsInvocationID(t *testing.T) {
	local(t)
	server, ca, _ := gateway(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(InvocationIDHeader, "from-gateway")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"invocationId":"from-gateway","error":{"code":"InvocationInFlight","message":"busy","source":"platform"}}`))
	})
	_, err := Invoke(context.Background(), endpointOf(server), 1, InvokeOptions{Token: "t", CAFile: ca})
	e, ok := AsError(err)
	if !ok || e.Code != CodeInvocationInFlight || e.HTTPStatus != 429 || e.InvocationID != "from-gateway" || !e.Sent() {
		t.Fatalf("got %#v", err)
	}
}
