package io.cudaloom.stress.jcstress;

/**
 * What a slot wakes, in the model checks. Its field is deliberately plain and non-final: a scanner
 * that reads {@code value} after taking the payload sees {@link #PUBLISHED} only if
 * {@code SlotTable.publish} really publishes the registrant's earlier plain writes (ordering 1).
 */
public final class Payload {
    /** The value every registrant writes before publishing. */
    public static final int PUBLISHED = 7;

    public int value;

    /** A payload carrying {@link #PUBLISHED}, written with a plain store. */
    public static Payload published() {
        Payload p = new Payload();
        p.value = PUBLISHED;
        return p;
    }
}
