// Package kruntimes invokes kruntimes function Runs through the runtime-gateway and runs
// agent sandbox sessions (NewSandbox): the endpoint from the Run, typed errors with the
// invoke contract's code, source and invocation ID, and never a retry after send.
package kruntimes

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	// DefaultTimeout bounds one call: the gateway's default invocation timeout (60 s) plus
	// room for its own 504 to arrive first.
	DefaultTimeout = 70 * time.Second
	// MaxRequestBytes is the gateway's bound of a request body.
	MaxRequestBytes = 1024 * 1024
	// maxResponseBytes is far above what the gateway answers (result, outputs and two bounded streams).
	maxResponseBytes = 64 * 1024 * 1024
	// InvocationIDHeader carries the invocation ID both ways.
	InvocationIDHeader = "X-Kruntime-Invocation-ID"
	// EnvGateway and EnvGatewayCAFile are what `krt dev env` sets for a caller outside the cluster.
	EnvGateway       = "KRT_GATEWAY_URL"
	EnvGatewayCAFile = "KRT_GATEWAY_CA_FILE"
)

// idleConnectionTimeout ends an idle connection before the gateway's keep-alive timeout
// (Node's 5 s) can: a request written on a connection the gateway is closing would fail
// after it was sent, ambiguous although the function never ran.
const idleConnectionTimeout = 4 * time.Second

var (
	validInvocationID = regexp.MustCompile(`^[\x21-\x7e]{1,128}$`)
	validToken        = regexp.MustCompile(`^[\x21-\x7e]+$`)
)

// Endpoint is where a Ready function Run is invoked: its status.endpoint.
type Endpoint struct {
	// URL names the namespace, the Runtime and the Run's UID (https).
	URL string
	// CABundle is base64 of the PEM CA bundle that verifies the gateway; empty: the system roots.
	CABundle string
}

// EndpointFromRun reads a Run's status.endpoint; a Run without one is CodeRunNotReady.
func EndpointFromRun(run *unstructured.Unstructured) (Endpoint, error) {
	endpointURL, _, _ := unstructured.NestedString(run.Object, "status", "endpoint", "url")
	caBundle, _, _ := unstructured.NestedString(run.Object, "status", "endpoint", "caBundle")
	if endpointURL == "" {
		phase, _, _ := unstructured.NestedString(run.Object, "status", "phase")
		if phase == "" {
			phase = "Pending"
		}
		return Endpoint{}, refused(CodeRunNotReady, fmt.Sprintf("Run %s/%s has no endpoint (phase %s)", run.GetNamespace(), run.GetName(), phase), "")
	}
	return Endpoint{URL: endpointURL, CABundle: caBundle}, nil
}

// InvokeOptions are the caller's side of one invocation.
type InvokeOptions struct {
	// Token is the caller's Kubernetes bearer token (required; never logged).
	Token string
	// InvocationID is 1-128 bytes of visible ASCII; empty: a random UUID.
	InvocationID string
	// Timeout bounds the whole call; zero: DefaultTimeout.
	Timeout time.Duration
	// Gateway is an https origin that replaces the endpoint's (a port forward, an ingress,
	// `npm run dev`); empty: $KRT_GATEWAY_URL, else the endpoint's own.
	Gateway string
	// CAFile verifies the gateway instead of the endpoint's CABundle; empty: $KRT_GATEWAY_CA_FILE.
	CAFile string
	// HTTPClient, when set, is used (and its connections reused) instead of a client made
	// for this call; see NewHTTPClient.
	HTTPClient *http.Client
}

// Stream is a captured stream of the handler, bounded by the gateway.
type Stream struct {
	Data       string `json:"data"`
	Truncated  bool   `json:"truncated"`
	TotalBytes int64  `json:"totalBytes"`
}

// Invocation is what a successful invocation returned.
type Invocation struct {
	InvocationID string `json:"invocationId"`
	// Result is the handler's return value (JSON).
	Result  json.RawMessage   `json:"result"`
	Outputs map[string]string `json:"outputs"`
	Stdout  *Stream           `json:"stdout"`
	Stderr  *Stream           `json:"stderr"`
	// Attempt is the Run attempt that served it.
	Attempt int `json:"attempt"`
}

// Invoke invokes the function Run at endpoint with payload (any JSON value, or a
// json.RawMessage sent as it is) and returns its result, or an *Error. It never retries:
// after an *Error whose RequestMayHaveBeenSent is true the function may have run, and
// repeating it is the caller's decision (key side effects on the invocation ID).
func Invoke(ctx context.Context, endpoint Endpoint, payload any, opts InvokeOptions) (*Invocation, error) {
	invocationID := opts.InvocationID
	if invocationID == "" {
		invocationID = uuid.NewString()
	}
	if !validInvocationID.MatchString(invocationID) {
		return nil, refused(CodeInvalidInvocationID, "the invocation ID must be 1-128 bytes of visible ASCII", invocationID)
	}
	body, err := requestBody(payload, invocationID)
	if err != nil {
		return nil, err
	}
	target, err := resolveTarget(endpoint, opts.Gateway, opts.Token, invocationID)
	if err != nil {
		return nil, err
	}
	client := opts.HTTPClient
	if client == nil {
		client, err = NewHTTPClient(endpoint, opts.CAFile)
		if err != nil {
			return nil, err
		}
		defer client.CloseIdleConnections()
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return post(ctx, client, target, opts.Token, body, invocationID, timeout)
}

// NewHTTPClient is an HTTPS client for the gateway of endpoint, verified with caFile
// (empty: $KRT_GATEWAY_CA_FILE, else the endpoint's CABundle, else the system roots). It
// keeps one connection open between calls (HTTP keep-alive), and its transport re-sends
// a request on a fresh connection only when nothing of it was written.
func NewHTTPClient(endpoint Endpoint, caFile string) (*http.Client, error) {
	if caFile == "" {
		caFile = os.Getenv(EnvGatewayCAFile)
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case caFile != "":
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, refused(CodeInvalidRequest, fmt.Sprintf("reading the gateway CA file: %v", err), "")
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			return nil, refused(CodeInvalidRequest, fmt.Sprintf("the gateway CA file %s holds no PEM certificate", caFile), "")
		}
	case endpoint.CABundle != "":
		pem, err := base64.StdEncoding.DecodeString(endpoint.CABundle)
		config.RootCAs = x509.NewCertPool()
		if err != nil || !config.RootCAs.AppendCertsFromPEM(pem) {
			return nil, refused(CodeInvalidRequest, "the endpoint's CA bundle is not base64 of PEM certificates", "")
		}
	}
	transport := &http.Transport{
		TLSClientConfig:     config,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     idleConnectionTimeout,
		TLSHandshakeTimeout: 10 * time.Second,
		// The gateway's 413 must be read, not a write error: no Expect: 100-continue games.
		ExpectContinueTimeout: 0,
		// Plain HTTP proxies from the environment are not the gateway's business.
		Proxy: nil,
	}
	return &http.Client{Transport: transport}, nil
}

func requestBody(payload any, invocationID string) ([]byte, error) {
	var body []byte
	switch value := payload.(type) {
	case json.RawMessage:
		if !json.Valid(value) {
			return nil, refused(CodeInvalidRequest, "the payload bytes are not a JSON document", invocationID)
		}
		body = value
	default:
		encoded, err := json.Marshal(value)
		if err != nil {
			return nil, refused(CodeInvalidRequest, fmt.Sprintf("the payload is not a JSON value: %v", err), invocationID)
		}
		body = encoded
	}
	if len(body) > MaxRequestBytes {
		return nil, refused(CodePayloadTooLarge, fmt.Sprintf("the payload is %d bytes, over the %d-byte limit", len(body), MaxRequestBytes), invocationID)
	}
	return body, nil
}

// resolveTarget is the URL to POST to: the endpoint's, its origin replaced by the gateway's when one is given.
func resolveTarget(endpoint Endpoint, gateway, token, invocationID string) (string, error) {
	if !validToken.MatchString(token) {
		return "", refused(CodeInvalidRequest, "a bearer token is needed and must be visible ASCII", invocationID)
	}
	target, err := url.Parse(endpoint.URL)
	if err != nil || target.Scheme != "https" || target.Host == "" {
		return "", refused(CodeInvalidRequest, fmt.Sprintf("the endpoint URL must be https, not %q", endpoint.URL), invocationID)
	}
	if gateway == "" {
		gateway = os.Getenv(EnvGateway)
	}
	if gateway != "" {
		origin, err := url.Parse(gateway)
		if err != nil || origin.Scheme != "https" || origin.Host == "" || (origin.Path != "" && origin.Path != "/") {
			return "", refused(CodeInvalidRequest, fmt.Sprintf("the gateway must be an https origin without a path, not %q", gateway), invocationID)
		}
		target.Host = origin.Host
	}
	return target.String(), nil
}

// post sends one invocation and reads its answer. Whether the request may have been sent
// is decided by the connection: an error before this attempt got a connection (dial, TLS)
// proves that nothing was written; any later one is ambiguous.
func post(ctx context.Context, client *http.Client, target, token string, body []byte, invocationID string, timeout time.Duration) (*Invocation, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{
		// Each attempt of the transport (a fresh one only when nothing was written) starts over.
		GetConn: func(string) { connected.Store(false) },
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	}
	request, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, refused(CodeInvalidRequest, fmt.Sprintf("building the request: %v", err), invocationID)
	}
	request.Header.Set("Authorization", "Bearer "+token)
	request.Header.Set("Content-Type", "application/json")
	request.Header.Set("Accept", "application/json")
	request.Header.Set(InvocationIDHeader, invocationID)
	answer, err := client.Do(request)
	if err != nil {
		return nil, transportError(ctx, err, connected.Load(), timeout, invocationID)
	}
	defer answer.Body.Close()
	text, err := io.ReadAll(io.LimitReader(answer.Body, maxResponseBytes+1))
	if err != nil {
		return nil, transportError(ctx, err, true, timeout, invocationID)
	}
	if len(text) > maxResponseBytes {
		return nil, transport("response", fmt.Sprintf("the answer is over %d bytes", maxResponseBytes), invocationID, true)
	}
	if answered := answer.Header.Get(InvocationIDHeader); answered != "" {
		invocationID = answered
	}
	if answer.StatusCode != http.StatusOK {
		return nil, withToolReason(errorFromAnswer(answer.StatusCode, text, invocationID))
	}
	var invocation Invocation
	if json.Unmarshal(text, &invocation) != nil || invocation.Result == nil {
		return nil, transport("response", "HTTP 200 without the result body of the invoke contract", invocationID, true)
	}
	if invocation.InvocationID == "" {
		invocation.InvocationID = invocationID
	}
	return &invocation, nil
}

func transportError(ctx context.Context, err error, connected bool, timeout time.Duration, invocationID string) *Error {
	var tlsError *tls.CertificateVerificationError
	var recordError tls.RecordHeaderError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && connected:
		return transport("timeout", fmt.Sprintf("no answer within %s; the function may have run", timeout), invocationID, true)
	case errors.Is(ctx.Err(), context.Canceled) && connected:
		return transport("canceled", "canceled after the request may have been sent; the function may have run", invocationID, true)
	case connected:
		return transport("connection", fmt.Sprintf("the connection failed after the request may have been sent; the function may have run: %v", err), invocationID, true)
	case errors.As(err, &tlsError) || errors.As(err, &recordError):
		return transport("tls", fmt.Sprintf("TLS handshake with the gateway failed: %v", err), invocationID, false)
	default:
		return transport("connect", fmt.Sprintf("cannot connect to the gateway: %v", err), invocationID, false)
	}
}
