package io.cudaloom.reactor.metrics;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR event {@value #NAME}: the scanner's fault probe found a stream faulted (or its query
 * failing) and failed the registrations waiting on it with a {@link io.cudaloom.GpuFaultException}. Committed
 * on the scanner thread, so it carries no stack trace.
 */
@Name(DeviceFaultEvent.NAME)
@Label("GPU Device Fault")
@Category("cuda-loom")
@Description("The fault probe found a stream faulted and failed the registrations waiting on it")
@StackTrace(false)
public final class DeviceFaultEvent extends Event {
    public static final String NAME = "io.cudaloom.DeviceFault";

    @Label("Device")
    String device = "";

    @Label("Stream")
    String stream = "";

    @Label("Error")
    @Description("The device's description of the fault, or why the stream could not be queried")
    String error = "";

    @Label("Registrations Failed")
    @Description("Slots and host-callback registrations failed with the fault: a parked await, a "
            + "callback or a coalesced group (however many waiters share it) count one each")
    int registrationsFailed;
}
