package promotion

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	promoterv1alpha1 "github.com/sluicehq/sluice/api/promoter/v1alpha1"
)

func timeAt(i int) time.Time { return time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC) }

func TestRecordPromotionIsBoundedAndIdempotent(t *testing.T) {
	var h []promoterv1alpha1.PromotionRecord
	for i := range 12 {
		h = RecordPromotion(h, promoterv1alpha1.PromotionRecord{DrySHA: "d", HydratedSHA: fmt.Sprint("h", i), MergeSHA: fmt.Sprint("m", i), Time: metav1.NewTime(timeAt(i))})
	}
	assert.Len(t, h, promoterv1alpha1.MaxHistory)
	assert.Equal(t, "m11", h[0].MergeSHA)
	again := RecordPromotion(h, promoterv1alpha1.PromotionRecord{HydratedSHA: "h11", MergeSHA: "m11"})
	assert.Equal(t, h, again)
}
