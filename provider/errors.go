package provider

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// explain turns an error from talking to kcp into a diagnostic that says
// what failed and what to check.
func explain(host, doing string, err error) diag.Diagnostic {
	return explainAt("kcp", host, doing, err)
}

// explainKube is explain for the cluster of the provider's kubernetes block.
func explainKube(conn *Connection, doing string, err error) diag.Diagnostic {
	return explainAt("the Kubernetes API server", conn.KubeHost(), doing, err)
}

func explainAt(label, host, doing string, err error) diag.Diagnostic {
	summary := "Failed " + doing
	var se *settingError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var netErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, errConfigUnknown):
		return diag.NewErrorDiagnostic("Provider configuration not known yet", err.Error())
	case errors.As(err, &se):
		return diag.NewErrorDiagnostic(se.Summary, se.Detail)
	case apierrors.IsUnauthorized(err):
		return diag.NewErrorDiagnostic(summary,
			fmt.Sprintf("%s at %s rejected the credentials (401 Unauthorized): check token, client_certificate/client_key or the kubeconfig user. (%v)", label, host, err))
	case apierrors.IsForbidden(err):
		return diag.NewErrorDiagnostic(summary,
			fmt.Sprintf("%s refused the request (403 Forbidden): %s. The identity in the provider configuration needs RBAC for this.", label, statusMessage(err)))
	case errors.As(err, &unknownAuthority), errors.As(err, &hostnameErr), strings.Contains(err.Error(), "x509:"):
		return diag.NewErrorDiagnostic(summary,
			fmt.Sprintf("the TLS certificate of %s could not be verified: set cluster_ca_certificate (or the kubeconfig's certificate-authority) to the CA that signed it. (%v)", host, err))
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &dnsErr), errors.As(err, &netErr):
		return diag.NewErrorDiagnostic(summary,
			fmt.Sprintf("cannot reach %s at %s: %v. Check host or the kubeconfig's server, and that it is running.", label, host, err))
	}
	return diag.NewErrorDiagnostic(summary, err.Error())
}

func statusMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// diagnostics is what resource helpers append their findings to.
type diagnostics = diag.Diagnostics

// explainIn is explain for a request into the workspace at wsPath: when the
// workspace itself does not exist, it says that instead of kcp's generic
// refusal.
func explainIn(ctx context.Context, conn *Connection, wsPath, doing string, err error) diag.Diagnostic {
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		if missing := firstMissing(ctx, conn, wsPath); missing != "" {
			return diag.NewErrorDiagnostic("Workspace not found",
				fmt.Sprintf("%s: %s.", doing, (&workspaceNotFoundError{Path: wsPath, Missing: missing}).Error()))
		}
	}
	return explain(conn.Host(), doing, err)
}

// workspaceGone reports whether err came from addressing a workspace that
// no longer exists, in which case everything in it is gone too.
func workspaceGone(ctx context.Context, conn *Connection, wsPath string, err error) bool {
	return (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)) && firstMissing(ctx, conn, wsPath) != ""
}
