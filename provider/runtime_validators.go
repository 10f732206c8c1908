package provider

import (
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

// quantityValidator accepts Kubernetes resource quantities such as 100m,
// as the renderer does.
func quantityValidator() validator.String {
	return stringCheck{description: "must be a Kubernetes quantity such as 100m or 128Mi", check: func(s string) string {
		if _, err := resource.ParseQuantity(s); err != nil {
			return "not a Kubernetes quantity"
		}
		return ""
	}}
}

// durationValidator accepts Go durations such as 720h, at least min.
func durationValidator(min time.Duration) validator.String {
	return stringCheck{description: fmt.Sprintf("must be a duration such as 720h, at least %s", min), check: func(s string) string {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return "not a duration"
		case d < min || d < 0:
			return fmt.Sprintf("too short: at least %s", min)
		}
		return ""
	}}
}

// cidrValidator accepts CIDRs in canonical form, as the renderer does.
func cidrValidator() validator.String {
	return stringCheck{description: "must be a CIDR such as 10.0.0.0/8 or fd00::/8", check: func(s string) string {
		if err := deploy.ValidateCIDR(s); err != nil {
			return err.Error()
		}
		return ""
	}}
}
