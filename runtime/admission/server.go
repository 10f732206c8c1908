package admission

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/go-logr/logr"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Where the admission endpoints are served (package v1alpha1 says why).
const (
	ValidatePath = v1alpha1.ValidatePath
	MutatePath   = v1alpha1.MutatePath
)

// Server serves the admission endpoints with controller-runtime's webhook
// server: over TLS 1.3 only, reloading its certificate from CertDir
// (tls.crt, tls.key) whenever the files change.
type Server struct {
	Addr      string
	CertDir   string
	Validator http.Handler
	// Indexer, when set, serves MutatePath.
	Indexer http.Handler
	Log     logr.Logger
}

// Start serves until ctx ends. It satisfies controller-runtime's Runnable,
// so the manager runs it; it does not need leader election.
func (s *Server) Start(ctx context.Context) error {
	host, portText, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("--bind-address %q: %w", s.Addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 {
		return fmt.Errorf("--bind-address %q: the port must be a number above 0", s.Addr)
	}
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host: host, Port: port, CertDir: s.CertDir, CertName: "tls.crt", KeyName: "tls.key",
		// kube-apiserver and kcp speak TLS 1.3; nothing older is needed.
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 }},
	})
	// Below each path, the URL may name the workspaces whose rules its
	// requests depend on (admission.Scope).
	srv.Register(ValidatePath, s.Validator)
	srv.Register(ValidatePath+"/", s.Validator)
	if s.Indexer != nil {
		srv.Register(MutatePath, s.Indexer)
		srv.Register(MutatePath+"/", s.Indexer)
	}
	s.Log.Info("serving admission requests", "addr", s.Addr, "paths", []string{ValidatePath, MutatePath})
	return srv.Start(ctx)
}

// NeedLeaderElection reports that every replica serves admission requests.
func (s *Server) NeedLeaderElection() bool { return false }
