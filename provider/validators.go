package provider

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The validators of string attributes that apply needs to be right. Each
// checks at plan exactly what the consumer of the value checks at apply
// (kcp, the API server, the renderer), so that a wrong value fails at plan
// with the attribute named, never half-way through an apply;
// FuzzPlanValidation holds them to that.

// workspacePathRE is the syntax of a workspace path from root; kcp's
// length limit per segment is checked apart (workspacePathProblem).
var workspacePathRE = regexp.MustCompile(`^root(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// stringCheck is a validator.String from a function that explains what is
// wrong with a value, or returns "".
type stringCheck struct {
	description string
	check       func(string) string
}

func (c stringCheck) Description(context.Context) string { return c.description }

func (c stringCheck) MarkdownDescription(ctx context.Context) string { return c.Description(ctx) }

func (c stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v := req.ConfigValue.ValueString()
	if problem := c.check(v); problem != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Attribute Value",
			fmt.Sprintf("Attribute %s value %s, got: %q (%s)", req.Path, c.description, v, problem))
	}
}

// objectNameValidator accepts what the API server accepts as the name of
// most objects: a DNS subdomain of at most 253 characters.
func objectNameValidator(description string) validator.String {
	return stringCheck{description: description, check: func(s string) string {
		return strings.Join(validation.IsDNS1123Subdomain(s), "; ")
	}}
}

// dnsLabelValidator accepts a DNS label, as namespace names must be.
func dnsLabelValidator(description string) validator.String {
	return stringCheck{description: description, check: func(s string) string {
		return strings.Join(validation.IsDNS1123Label(s), "; ")
	}}
}

// workspacePathValidator accepts a workspace path from root whose segments
// kcp accepts as workspace names (at most 63 characters each).
func workspacePathValidator() validator.String {
	return stringCheck{
		description: "must be a kcp workspace path that starts at root, with lowercase segments of letters, digits and '-' separated by ':', such as root:org:network",
		check:       workspacePathProblem,
	}
}

func workspacePathProblem(s string) string {
	if !workspacePathRE.MatchString(s) {
		return "not a workspace path"
	}
	if _, ok := logicalcluster.NewValidatedPath(s); !ok {
		return "a segment is longer than 63 characters"
	}
	return ""
}

// validWorkspacePath and validObjectName check parts of import IDs the
// way the validators check attributes.
func validWorkspacePath(s string) bool { return workspacePathProblem(s) == "" }

func validObjectName(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }

// httpsURLValidator accepts an https URL with a host and nothing the API
// server refuses in a webhook's clientConfig.url or that a client would
// drop: no user information, query or fragment.
func httpsURLValidator(example string) validator.String {
	return stringCheck{description: "must be an https URL such as " + example, check: httpsURLProblem}
}

func httpsURLProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL"
	case u.Scheme != "https":
		return "the scheme must be https"
	case u.Host == "" || u.Hostname() == "":
		return "no host"
	case u.User != nil:
		return "user information is not allowed"
	case u.RawQuery != "" || u.ForceQuery:
		return "a query is not allowed"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "a fragment is not allowed"
	case strings.ContainsAny(s, " \t\r\n"):
		return "whitespace is not allowed"
	}
	return ""
}
