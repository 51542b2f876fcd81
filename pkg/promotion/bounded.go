package promotion

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

// RecordHealthy puts dry SHA sha at the head of list, newest first and at most
// MaxLastHealthyDrySHAs long. A SHA already at the head keeps its first time; one seen before
// further down moves to the head with the new time, as it became healthy again.
func RecordHealthy(list []promoterv1alpha1.HealthyDrySHA, sha, hydrated string, now time.Time) []promoterv1alpha1.HealthyDrySHA {
	if sha == "" {
		return list
	}
	if len(list) > 0 && list[0].SHA == sha {
		return list
	}
	out := []promoterv1alpha1.HealthyDrySHA{{SHA: sha, HydratedSHA: hydrated, Time: metav1.NewTime(now)}}
	for _, h := range list {
		if h.SHA != sha && len(out) < promoterv1alpha1.MaxLastHealthyDrySHAs {
			out = append(out, h)
		}
	}
	return out
}

// RecordPromotion puts r at the head of history, newest first and at most MaxHistory long. A
// record for the same merge is not added twice, so repeating it after a crash is harmless.
func RecordPromotion(history []promoterv1alpha1.PromotionRecord, r promoterv1alpha1.PromotionRecord) []promoterv1alpha1.PromotionRecord {
	for _, h := range history {
		if h.MergeSHA == r.MergeSHA && h.HydratedSHA == r.HydratedSHA {
			return history
		}
	}
	out := append([]promoterv1alpha1.PromotionRecord{r}, history...)
	if len(out) > promoterv1alpha1.MaxHistory {
		out = out[:promoterv1alpha1.MaxHistory]
	}
	return out
}
