package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// Where the admission endpoints are served: deletions are decided at
// ValidatePath, dependents are indexed at MutatePath.
const (
	ValidatePath = "/validate"
	MutatePath   = "/mutate"
)

// Server serves the admission endpoint over TLS only, reloading its
// certificate from CertDir (tls.crt, tls.key) whenever the files change.
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
	watcher, err := certwatcher.New(filepath.Join(s.CertDir, "tls.crt"), filepath.Join(s.CertDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("loading the serving certificate from %s: %w", s.CertDir, err)
	}
	go func() {
		if err := watcher.Start(ctx); err != nil {
			s.Log.Error(err, "certificate watcher stopped")
		}
	}()
	mux := http.NewServeMux()
	// Below each path, the URL may name the workspaces whose rules its
	// requests depend on (package scope).
	mux.Handle(ValidatePath, s.Validator)
	mux.Handle(ValidatePath+"/", s.Validator)
	if s.Indexer != nil {
		mux.Handle(MutatePath, s.Indexer)
		mux.Handle(MutatePath+"/", s.Indexer)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{
			// kube-apiserver and kcp speak TLS 1.3; nothing older is needed.
			MinVersion:     tls.VersionTLS13,
			GetCertificate: watcher.GetCertificate,
		},
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.Addr, err)
	}
	s.Log.Info("serving admission requests", "addr", ln.Addr().String(), "path", ValidatePath)
	errCh := make(chan error, 1)
	go func() { errCh <- srv.ServeTLS(ln, "", "") }()
	select {
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(shutdownCtx)
	case err := <-errCh:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// NeedLeaderElection reports that every replica serves admission requests.
func (s *Server) NeedLeaderElection() bool { return false }
