// Command sandbox is a benchmark driver (not a test), started by
// tools/benchmarks/src/sandbox-bench.ts, which starts the system and sets KUBECONFIG
// (a user who may read and use the Runtime and create, watch and delete Runs),
// KRT_GATEWAY_URL, KRT_GATEWAY_CA_FILE and the KRT_BENCH_* variables read here.
//
// One Sandbox session; its tool call (list_files) against the raw gateway request with the
// same payload through net/http on one kept-open connection, call by call alternately in
// rounds whose first path alternates; then sandboxes started and closed one after another.
// Prints one JSON line of the samples (ms) on stdout; the bench summarizes them.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	kruntimes "github.com/kruntimes/kruntimes/clients/go"
)

var tool = map[string]any{"tool": "list_files", "path": "."}

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func number(name string) (int, error) {
	value, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return value, nil
}

func timed(samples *[]float64, one func() error) error {
	started := time.Now()
	err := one()
	*samples = append(*samples, float64(time.Since(started).Nanoseconds())/1e6)
	return err
}

// rawClient is net/http with one kept-open connection to the gateway, HTTP/1.1 as the session's.
func rawClient(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in %s", caFile)
	}
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		Proxy:               nil,
	}
	return &http.Client{Transport: transport, Timeout: 30 * time.Second}, nil
}

func run(ctx context.Context) error {
	namespace, runtime := os.Getenv("KRT_BENCH_NAMESPACE"), os.Getenv("KRT_BENCH_RUNTIME")
	calls, err := number("KRT_BENCH_CALLS")
	if err != nil {
		return err
	}
	rounds, err := number("KRT_BENCH_ROUNDS")
	if err != nil {
		return err
	}
	sandboxes, err := number("KRT_BENCH_SANDBOXES")
	if err != nil {
		return err
	}
	warmup, err := number("KRT_BENCH_WARMUP")
	if err != nil {
		return err
	}
	config, err := kruntimes.ConfigFromEnvironment()
	if err != nil {
		return err
	}
	opts := kruntimes.SandboxOptions{Namespace: namespace, Runtime: runtime, Exclusive: true, Config: config}
	samples := struct {
		Raw     []float64 `json:"raw"`
		Session []float64 `json:"session"`
		Ready   []float64 `json:"ready"`
		Close   []float64 `json:"close"`
	}{}

	sandbox, _, err := kruntimes.NewSandbox(ctx, opts)
	if err != nil {
		return err
	}
	measured := func() error {
		// The raw request goes where the session's does: the Run's endpoint path at the gateway's origin.
		endpoint, err := kruntimes.EndpointFromRun(sandbox.Run())
		if err != nil {
			return err
		}
		target, err := url.Parse(endpoint.URL)
		if err != nil {
			return err
		}
		origin, err := url.Parse(os.Getenv(kruntimes.EnvGateway))
		if err != nil {
			return err
		}
		target.Host = origin.Host
		client, err := rawClient(os.Getenv(kruntimes.EnvGatewayCAFile))
		if err != nil {
			return err
		}
		defer client.CloseIdleConnections()
		body, err := json.Marshal(tool)
		if err != nil {
			return err
		}
		raw := func() error {
			request, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
			if err != nil {
				return err
			}
			request.Header.Set("Authorization", "Bearer "+config.BearerToken)
			request.Header.Set("Content-Type", "application/json")
			answer, err := client.Do(request)
			if err != nil {
				return err
			}
			defer answer.Body.Close()
			if _, err := io.Copy(io.Discard, answer.Body); err != nil {
				return err
			}
			if answer.StatusCode != http.StatusOK {
				return fmt.Errorf("raw gateway request answered %d", answer.StatusCode)
			}
			return nil
		}
		session := func() error {
			_, err := sandbox.Call(ctx, "list_files", map[string]any{"path": "."})
			return err
		}
		for range warmup {
			if err := errors.Join(raw(), session()); err != nil {
				return err
			}
		}
		paths := []struct {
			samples *[]float64
			one     func() error
		}{{&samples.Raw, raw}, {&samples.Session, session}}
		perRound := (calls + rounds - 1) / rounds
		for round := range rounds {
			for range perRound {
				for i := range paths {
					path := paths[i]
					if round%2 == 1 {
						path = paths[len(paths)-1-i]
					}
					if err := timed(path.samples, path.one); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := errors.Join(measured(), sandbox.Close(ctx)); err != nil {
		return err
	}

	for range sandboxes {
		var next *kruntimes.Sandbox
		if err := timed(&samples.Ready, func() error {
			var err error
			next, _, err = kruntimes.NewSandbox(ctx, opts)
			return err
		}); err != nil {
			return err
		}
		if err := timed(&samples.Close, func() error { return next.Close(ctx) }); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(samples)
}
