package controller

import (
	"net/url"
	"strings"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// The paths the webhook serves its two endpoints at.
const (
	validatePath = v1alpha1.ValidatePath
	mutatePath   = v1alpha1.MutatePath
)

// MutateURL is where kcp sends writes of dependents for the reference
// index: --webhook-mutate-url, or else the same host and port as
// --webhook-url, which every installation already routes to the webhook.
func (o *Options) MutateURL() string {
	if o.WebhookMutateURL != "" {
		return o.WebhookMutateURL
	}
	return DeriveMutateURL(o.WebhookURL)
}

// DeriveMutateURL turns the validation endpoint's URL into the reference
// index endpoint's: a trailing /validate becomes /mutate, and any other
// path gets /mutate appended, so that a path prefix in front of the
// webhook (an ingress route) is kept.
func DeriveMutateURL(validateURL string) string {
	u, err := url.Parse(validateURL)
	if err != nil {
		return validateURL // Validate rejects it before anything runs
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), validatePath)
	u.Path, u.RawPath = p+mutatePath, ""
	return u.String()
}

func isHTTPSURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != ""
}
