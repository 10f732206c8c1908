package webhook

import (
	"context"
	"fmt"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// SelfUser returns a function that tells the webhook's own user, as kcp
// authenticates it (name and extra), asking once with a SelfSubjectReview
// and remembering the answer; a failed ask is tried again the next time.
func SelfUser(cfg *rest.Config) (func(ctx context.Context) (authenticationv1.UserInfo, error), error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client to learn the webhook's own user: %w", err)
	}
	var mu sync.Mutex
	var self authenticationv1.UserInfo
	return func(ctx context.Context) (authenticationv1.UserInfo, error) {
		mu.Lock()
		defer mu.Unlock()
		if self.Username != "" {
			return self, nil
		}
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return authenticationv1.UserInfo{}, fmt.Errorf("asking kcp who the webhook is (SelfSubjectReview): %w", err)
		}
		if review.Status.UserInfo.Username == "" {
			return authenticationv1.UserInfo{}, fmt.Errorf("asking kcp who the webhook is: the SelfSubjectReview names no user")
		}
		self = review.Status.UserInfo
		return self, nil
	}, nil
}
