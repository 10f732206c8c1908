package provider

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
)

var (
	dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	imageRE    = deploy.ImageRE
	imageTagRE = deploy.TagRE
	flagRE     = regexp.MustCompile(`^--?[A-Za-z0-9][-A-Za-z0-9_.]*(=[^\x00-\x1f\x7f]*)?$`)
	sanRE      = regexp.MustCompile(`^([a-z0-9*]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*|[0-9.]+|[0-9a-fA-F:]+)$`)
)

func boolRequiresReplace() planmodifier.Bool { return boolplanmodifier.RequiresReplace() }

// quantityValidator accepts Kubernetes resource quantities such as 100m.
type quantityValidator struct{}

func (quantityValidator) Description(context.Context) string {
	return "must be a Kubernetes quantity such as 100m or 128Mi"
}
func (v quantityValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (quantityValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := resource.ParseQuantity(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid quantity",
			fmt.Sprintf("%s: %q is not a Kubernetes quantity such as 100m, 0.5 or 128Mi", req.Path, req.ConfigValue.ValueString()))
	}
}

// durationValidator accepts Go durations such as 720h, at least min.
type durationValidator struct{ min time.Duration }

func (v durationValidator) Description(context.Context) string {
	return fmt.Sprintf("must be a duration such as 720h, at least %s", v.min)
}
func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%s: %q is not a duration such as 720h or 90m", req.Path, req.ConfigValue.ValueString()))
	case d < v.min || d < 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%s: %q is too short: it must be at least %s", req.Path, req.ConfigValue.ValueString(), v.min))
	}
}
