package io.cudaloom.reactor.metrics;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * JFR event {@value #NAME}: a registration (an await, a callback or a coalesced group) served by a
 * host callback on the stream instead of a completion slot. Committed by {@link io.cudaloom.reactor.metrics.JfrEvents} on
 * the registering thread, once the stream has accepted the callback (what
 * {@link io.cudaloom.ReactorStats#fallbacks()} counts). Under the {@link io.cudaloom.CompletionStrategy#HOST_CALLBACK}
 * strategy every registration is one.
 */
@Name(FallbackEvent.NAME)
@Label("Host-Callback Fallback")
@Category("cuda-loom")
@Description("A registration served by a host callback on the stream instead of a completion slot")
public final class FallbackEvent extends Event {
    public static final String NAME = "io.cudaloom.Fallback";

    @Label("Device")
    String device = "";

    @Label("Stream")
    String stream = "";

    /** {@link io.cudaloom.reactor.FallbackReason#eventReason}: one value per {@link io.cudaloom.reactor.FallbackReason}, each named in the description. */
    @Label("Reason")
    @Description("pool exhausted: no completion slot was free; write refused: the stream refused the "
            + "flag write; HOST_CALLBACK strategy: the reactor uses no slots")
    String reason = "";
}
